"""Run one emulator app with uvicorn until SIGTERM: `--host`, `--port`, and `--warehouse` (the DuckDB file
its queries read; default ADE_HOME/warehouse/demo.duckdb).

Every request passes the Host/Origin guard first (ade_platform/lib/http_guard.py): a web page the user opens
cannot reach an emulator on loopback through DNS rebinding or a cross-site request. `GET /_emulator/requests`
answers how many requests of each method and path the emulator served (the tests' proof that a read sent no
write)."""

from __future__ import annotations

import argparse
import json
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

    app = HostOriginGuard(RequestCounts(build(args)), local_policy(args.port, args.host))
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


class RequestCounts:
    """An ASGI app that counts its HTTP requests by method and path (no query, no body) and serves the counts at
    `GET /_emulator/requests`: `{"requests": {"POST /api/4.0/login": 1, ...}}`."""

    PATH = "/_emulator/requests"

    def __init__(self, app: Any):
        self.app = app
        self.counts: dict[str, int] = {}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            return await self.app(scope, receive, send)
        if scope.get("path") == self.PATH and scope.get("method") == "GET":
            body = json.dumps({"requests": dict(self.counts)}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return None
        key = f"{scope.get('method')} {scope.get('path')}"
        self.counts[key] = self.counts.get(key, 0) + 1
        return await self.app(scope, receive, send)
