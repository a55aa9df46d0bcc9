"""python -m ade_platform.emulators.snowflake --host H --port P: the demo's Snowflake stand-in, until SIGTERM."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from ade_platform.emulators._serve import serve_with
from ade_platform.emulators.snowflake import load, seed_statements, write_connection
from ade_platform.emulators.snowflake.session_features import fakesnow_app, install, shared_connection


def build_app(args: argparse.Namespace) -> Any:
    """fakesnow with the session features, loaded with the demo data, and the snow connection that reaches it."""
    install()
    home = Path(os.environ.get("ADE_HOME") or ".ade").resolve()
    with tempfile.TemporaryDirectory(prefix="ade-snowflake-seed-") as workdir:
        load(shared_connection(), seed_statements(Path(workdir)))
    write_connection(home, args.host, args.port)
    return fakesnow_app()


if __name__ == "__main__":
    serve_with("snowflake", build_app)
