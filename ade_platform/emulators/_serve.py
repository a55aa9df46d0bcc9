"""Run one emulator app with uvicorn until SIGTERM: `--host`, `--port`, and `--warehouse` (the DuckDB file
its queries read; default ADE_HOME/warehouse/demo.duckdb).

Every request passes the Host/Origin guard first (ade_platform/lib/http_guard.py): a web page the user opens
cannot reach an emulator on loopback through DNS rebinding or a cross-site request."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ade_platform.lib.http_guard import HostOriginGuard, local_policy


def serve(name: str, build_app: Callable[[Path | None], Any]) -> None:
    """An emulator whose app needs only the warehouse it reads."""
    serve_with(name, lambda args: build_app(args.warehouse))


def serve_with(name: str, build: Callable[[argparse.Namespace], Any]) -> None:
    """An emulator whose app is built from the parsed arguments (`host`, `port`, `warehouse`)."""
    parser = argparse.ArgumentParser(prog=f"python -m ade_platform.emulators.{name}")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--warehouse", type=Path, default=None, help="DuckDB file the queries read.")
    args = parser.parse_args()
    import uvicorn

    app = HostOriginGuard(build(args), local_policy(args.port, args.host))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
