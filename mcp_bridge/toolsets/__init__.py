"""One FastMCP sub-server per spec server. Modules are imported only when their toolset is enabled.

The toolsets and the module of each are declared once, in `ade_platform.config.mcp` (`TOOLSET_MODULES`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ade_platform.config import TOOLSET_MODULES

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from mcp_bridge.context import BridgeContext


def build_toolset(name: str, ctx: BridgeContext, cache_schemas: bool = True) -> FastMCP:
    """The toolset's server; its tools' schemas come from the schema cache unless `cache_schemas` is off."""
    from mcp_bridge.tool_schemas import ToolSchemaCache
    from mcp_bridge.toolsets.base import schema_cache

    module = importlib.import_module(f"mcp_bridge.toolsets.{TOOLSET_MODULES[name]}")
    cache = ToolSchemaCache.for_settings(ctx.settings, name) if cache_schemas else None
    with schema_cache(cache):
        server = module.build(ctx)
    from mcp_bridge.errors import StructuredErrors

    for middleware in server.middleware:  # error details pass the configured secrets' scrubber
        if isinstance(middleware, StructuredErrors):
            middleware.scrub = ctx.scrubber()
    return server
