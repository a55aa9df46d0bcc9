"""The MCP gateway: one FastMCP server mounting the toolsets enabled in config.

Importing this module (and serving cached tools) does not import Dagster; live tools import ade_platform.live,
which imports Dagster lazily on first use.
"""

from __future__ import annotations

import logging
import os
from typing import Literal

from fastmcp import FastMCP

from ade_platform import __version__
from ade_platform.config import SERVER_ALIASES, TOOLSETS, ConfigError, Settings
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import StructuredErrors
from mcp_bridge.toolsets import build_toolset

log = logging.getLogger("ade.mcp")
GATEWAY_NAME = "ade-platform"


def build_server(settings: Settings, only: str | None = None, ctx: BridgeContext | None = None) -> FastMCP:
    """The gateway with every enabled toolset mounted, or one toolset alone when `only` names it."""
    ctx = ctx or BridgeContext.from_settings(settings)
    if only is not None:
        only = SERVER_ALIASES.get(only, only)
        if only not in TOOLSETS:
            raise ConfigError(f"--server {only}: unknown toolset; choose from {list(TOOLSETS)}")
        return build_toolset(only, ctx)
    gateway = FastMCP(
        GATEWAY_NAME,
        version=__version__,  # serverInfo names ADE and its version, not the framework's
        instructions=(
            "ADE Platform: the tools of a senior data engineer. Cached tools answer from metadata that "
            "Dagster materializes (each answer carries provenance: asset, materialized_at, age_seconds, "
            "run_id); live tools run as audited Dagster runs. Errors are JSON: {error, detail, hint}."
        ),
        mask_error_details=True,
        middleware=[StructuredErrors(ctx.scrubber())],
        # the toolsets' schemas are inlined once when their tools are registered (mcp_bridge/tool_schemas.py)
        dereference_schemas=False,
    )
    for name in settings.mcp.toolsets:
        gateway.mount(build_toolset(name, ctx))
    return gateway


def serve(
    settings: Settings,
    server_name: str | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str | None = None,
    port: int | None = None,
) -> None:
    # FastMCP keeps per-session state in py-key-value, which type-checks its own internals with beartype at
    # import (warnings only): ~150 ms of the first tools/list on a cold start. Its documented switch turns
    # that off; the gateway keeps no session state of its own.
    os.environ.setdefault("PY_KEY_VALUE_DISABLE_BEARTYPE", "true")
    if transport == "stdio":
        build_server(settings, only=server_name).run(transport="stdio", show_banner=False)
        return
    from mcp_bridge.http_security import http_auth, http_options

    host = host or settings.mcp.http.host
    port = port or settings.mcp.http.port
    # Checked before anything is built (a ConfigError stops start-up): a token off loopback, the allowed host
    # names when bound to every interface. Every request then passes the Host/Origin guard before any route.
    auth = http_auth(settings, host)
    options = http_options(settings, host, port)
    server = build_server(settings, only=server_name)
    server.auth = auth
    server.run(transport="http", host=host, port=port, show_banner=False, **options)
