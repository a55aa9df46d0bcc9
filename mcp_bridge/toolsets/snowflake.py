"""snowflake: Snowflake through the snow CLI, behind a metadata-only proxy.

The tools arrive with this toolset's issue; until then the sub-server is mounted with no tools.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset("snowflake", "Snowflake through the snow CLI, behind a metadata-only proxy.")
