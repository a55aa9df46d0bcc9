"""The floor: a FastMCP server with one no-op tool, served over HTTP as `ade mcp --transport http` is.

python -m benchmarks.serve.noop --port PORT
"""

from __future__ import annotations

import os
import sys

from fastmcp import FastMCP


def noop() -> dict[str, bool]:
    """No-op: the MCP round-trip floor."""
    return {"ok": True}


def main() -> None:
    os.environ.setdefault("PY_KEY_VALUE_DISABLE_BEARTYPE", "true")  # as `ade mcp` sets it
    server = FastMCP("noop")
    server.tool(noop)
    server.run(
        transport="http",
        host="127.0.0.1",
        port=int(sys.argv[sys.argv.index("--port") + 1]),
        show_banner=False,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
