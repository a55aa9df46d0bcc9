"""Shared shape of a toolset: one FastMCP sub-server per spec server, servable alone or mounted."""

from __future__ import annotations

from fastmcp import FastMCP
from mcp.types import ToolAnnotations

from mcp_bridge.errors import StructuredErrors

READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
READ_ONLY_OPEN_WORLD = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True
)


def new_toolset(name: str, instructions: str) -> FastMCP:
    # mask_error_details: an exception we did not anticipate must not leak its message to the agent.
    return FastMCP(name, instructions=instructions, mask_error_details=True, middleware=[StructuredErrors()])
