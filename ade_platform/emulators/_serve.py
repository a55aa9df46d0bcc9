"""Run one emulator app with uvicorn until SIGTERM: `--host`, `--port`, and `--warehouse` (the DuckDB file
its queries read; default ADE_HOME/warehouse/demo.duckdb)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any


def serve(name: str, build_app: Callable[[Path | None], Any]) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m ade_platform.emulators.{name}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--warehouse", type=Path, default=None, help="DuckDB file the queries read.")
    args = parser.parse_args()
    import uvicorn

    uvicorn.run(build_app(args.warehouse), host=args.host, port=args.port, log_level="warning")
