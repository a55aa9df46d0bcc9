"""`ade mcp` over stdio plus one no-op tool, `bench_noop`, the baseline of an MCP round trip.

    ADE_CONFIG=... ADE_HOME=... python -m benchmarks.warehouse.gateway

The gateway is built exactly as `ade mcp` builds it (same toolsets, middleware and live runner); only the
no-op tool is added, so that a round trip with no work in it is measured through the same stack.
"""

from __future__ import annotations

import os

from ade_platform.config import load_settings
from mcp_bridge.server import build_server
from mcp_bridge.toolsets.base import READ_ONLY


def bench_noop() -> dict[str, bool]:
    """No-op: the MCP round-trip baseline."""
    return {"ok": True}


def main() -> None:
    settings = load_settings(os.environ["ADE_CONFIG"], env=dict(os.environ))
    server = build_server(settings)
    server.tool(annotations=READ_ONLY)(bench_noop)
    server.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
