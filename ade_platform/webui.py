"""The Dagster UI behind the same Host/Origin guard as the MCP gateway: `python -m ade_platform.webui`.

`dagster dev` serves Dagster's webserver on loopback with no check of Host or Origin, so a web page the user opens
could reach its GraphQL API through DNS rebinding (or a cross-site WebSocket, which CORS does not stop) and launch
the platform's jobs. `ade dev` therefore runs the Dagster daemon and this server instead: Dagster's own webserver
app, built as `dagster-webserver` builds it, wrapped in `ade_platform/lib/http_guard.py` (403 for a Host that does
not name this server, or a foreign browser Origin; WebSocket handshakes included).

The instance comes from DAGSTER_HOME, the code locations from the workspace file.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import uvicorn
from dagster import DagsterInstance

# Dagster has no public API to build its webserver app around a workspace: these are the names its own
# `dagster-webserver` command uses (dagster_webserver/cli.py), pinned by uv.lock and exercised by test_dev.
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import WorkspaceFileTarget
from dagster_webserver.app import create_app_from_workspace_process_context
from dagster_webserver.version import __version__ as webserver_version

from ade_platform.lib.http_guard import HostOriginGuard, local_policy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ade_platform.webui")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("-w", "--workspace", type=Path, required=True, help="the Dagster workspace file")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        instance = stack.enter_context(DagsterInstance.get())
        context = stack.enter_context(
            WorkspaceProcessContext(
                instance,
                version=webserver_version,
                read_only=False,
                workspace_load_target=WorkspaceFileTarget(paths=[str(args.workspace)]),
            )
        )
        app = create_app_from_workspace_process_context(context)
        guarded = HostOriginGuard(app, local_policy(args.port, args.host))
        uvicorn.run(guarded, host=args.host, port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
