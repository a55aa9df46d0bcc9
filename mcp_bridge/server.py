"""The MCP gateway: one FastMCP server mounting the toolsets enabled in config.

Importing this module (and serving cached tools) does not import Dagster; live tools import ade_platform.live,
which imports Dagster lazily on first use.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from fastmcp import FastMCP

from ade_platform import __version__
from ade_platform.config import SERVER_ALIASES, TOOLSETS, ConfigError, Settings
from mcp_bridge import log_hygiene
from mcp_bridge.access import AccessControl, CallerAccess
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import StructuredErrors
from mcp_bridge.listing import DeferredToolsets, RecordListing, load_listing
from mcp_bridge.startup import AfterFirstListing, start_warm_ups
from mcp_bridge.tasks import LazyTasks, hint_list_results
from mcp_bridge.toolsets import build_toolset
from mcp_bridge.toolsets.base import shared_parameters
from mcp_bridge.toolsets.schemas.paging import PARAMETERS as PAGING_PARAMETERS
from mcp_bridge.toolsets.schemas.provenance import PROVENANCE_KEYS

if TYPE_CHECKING:
    from mcp_bridge.push import IncidentPush

log = logging.getLogger("ade.mcp")
GATEWAY_NAME = "ade-platform"


def build_server(
    settings: Settings,
    only: str | None = None,
    ctx: BridgeContext | None = None,
    access: AccessControl | None = None,
    defer: bool = False,
) -> FastMCP:
    """The gateway with every enabled toolset mounted, or one toolset alone when `only` names it. Every call runs
    as its caller (named in its audit runs); `access` (signed-in callers) limits what each caller may do.
    `defer` (`ade mcp` over stdio): answer initialize and tools/list from the listing an earlier start with the
    same code and settings served, and build the toolsets right after (mcp_bridge/listing.py)."""
    ctx = ctx or BridgeContext.from_settings(settings)
    # A failed call logs its code and a short reason, never a traceback above DEBUG (mcp_bridge/log_hygiene.py).
    log_hygiene.install(ctx.scrubber(), _workspace(settings))
    if only is not None:
        only = SERVER_ALIASES.get(only, only)
        if only not in TOOLSETS:
            raise ConfigError(f"--server {only}: unknown toolset; choose from {list(TOOLSETS)}")
        toolset = build_toolset(only, ctx)
        caller_access = CallerAccess(settings, access, {only: toolset})
        toolset.add_middleware(caller_access)
        toolset.add_middleware(AfterFirstListing(toolset, _warm_ups([toolset])))
        if getattr(toolset, "tasks", None) is not None:
            toolset.tasks.access = caller_access
        hint_list_results(toolset)
        if only == "incidents":
            _serve_push(toolset, settings).service = toolset.incident_service  # type: ignore[attr-defined]
        return toolset
    listing = load_listing(settings) if defer and access is None else None
    toolsets = _build_toolsets(settings, ctx) if listing is None else {}
    caller_access = CallerAccess(settings, access, toolsets)
    instructions = gateway_instructions(toolsets) if listing is None else listing.instructions
    gateway = FastMCP(
        GATEWAY_NAME,
        version=__version__,  # serverInfo names ADE and its version, not the framework's
        instructions=instructions,
        mask_error_details=True,
        middleware=[StructuredErrors(ctx.scrubber()), caller_access],
        # the toolsets' schemas take their published form once, at registration (mcp_bridge/schema_form.py)
        dereference_schemas=False,
    )
    push = _serve_push(gateway, settings) if "incidents" in settings.mcp.toolsets else None

    def serve_toolsets(toolsets: dict[str, FastMCP]) -> None:
        caller_access.toolsets.update(toolsets)
        for toolset in toolsets.values():
            adopt(gateway, toolset)
        if push is not None:
            push.service = toolsets["incidents"].incident_service  # type: ignore[attr-defined]

    if listing is None:
        serve_toolsets(toolsets)
        tasks = _has_tasks(toolsets)
        if tasks:  # the adopted tools' tasks run on the gateway's extension, as the gateway's caller
            gateway.add_extension(LazyTasks(caller_access))
        gateway.add_middleware(AfterFirstListing(gateway, _warm_ups(toolsets.values())))
        if defer:  # the next start answers its listing from what this one serves
            gateway.add_middleware(RecordListing(settings, instructions, tasks))
    else:
        if listing.tasks:
            gateway.add_extension(LazyTasks(caller_access))
        gateway.add_middleware(AfterFirstListing(gateway, []))

        def serve_built(toolsets: dict[str, FastMCP]) -> None:
            serve_toolsets(toolsets)
            start_warm_ups(_warm_ups(toolsets.values()))  # the listing has long been answered

        build_later = functools.partial(_build_toolsets, settings, ctx)
        gateway.add_middleware(DeferredToolsets(gateway, settings, listing, build_later, serve_built))
    hint_list_results(gateway)
    return gateway


def _build_toolsets(settings: Settings, ctx: BridgeContext) -> dict[str, FastMCP]:
    return {name: build_toolset(name, ctx) for name in settings.mcp.toolsets}


def _has_tasks(toolsets: dict[str, FastMCP]) -> bool:
    return any(getattr(toolset, "tasks", None) is not None for toolset in toolsets.values())


def _serve_push(server: FastMCP, settings: Settings) -> IncidentPush:
    """Resource subscriptions and `subscriptions/listen` for the incidents, on a server that serves their
    toolset. The push reads the toolset's service, set once the toolset is built: every request that reaches
    the push's handlers waits for the build (mcp_bridge/listing.py)."""
    from mcp_bridge.push import install

    push = install(server, settings)
    server.incident_push = push  # type: ignore[attr-defined]  # its listener count, for tests
    return push


def adopt(gateway: FastMCP, toolset: FastMCP) -> None:
    """Serve a toolset's tools, resources, resource templates and prompts from the gateway itself.

    Mounting would do the same for the listing, but at a price on every call (measured in
    benchmarks/serve/README.md): FastMCP looks a called tool up in every mounted server at once (a task per
    toolset, on the event loop), then runs the call through the toolset's own middleware chain and looks the
    tool up there again. Registered here, a call is one lookup among the gateway's own components and one
    middleware chain (the gateway's: errors, caller, access), as on a one-tool server. The toolset's server
    still holds its components: `ade mcp --server <name>` serves it alone, and `CallerAccess` reads which
    toolset owns what from it. Toolsets register nothing at run time and have no lifespan of their own, the
    two things only mounting would carry over."""
    from fastmcp.prompts import Prompt
    from fastmcp.resources import Resource, ResourceTemplate
    from fastmcp.tools import Tool

    # FastMCP offers no public listing that is not a coroutine; the provider's store is the toolset's own
    # registrations, in the order they were made.
    for component in list(toolset.local_provider._components.values()):
        if isinstance(component, Tool):
            gateway.add_tool(component)
        elif isinstance(component, Resource | ResourceTemplate):
            gateway.add_resource(component)
        elif isinstance(component, Prompt):
            gateway.add_prompt(component)
        else:  # a kind FastMCP added since: refuse to drop it silently
            raise TypeError(
                f"toolset {toolset.name}: cannot serve a {type(component).__name__} from the gateway"
            )


def gateway_instructions(toolsets: dict[str, FastMCP]) -> str:
    """What the gateway says once, at initialize: what it is, the provenance keys, the parameters the mounted
    toolsets share (described here rather than in each tool's input schema) and the paging parameters."""
    shared = [
        shared_parameters(parameters, name)
        for name, toolset in toolsets.items()
        if (parameters := getattr(toolset, "shared_parameters", None))
    ]
    intro = (
        "ADE Platform: the tools of a senior data engineer. Cached tools answer from metadata that Dagster "
        "materializes (each answer carries provenance: asset, materialized_at, age_seconds, run_id); live tools "
        "run as audited Dagster runs. Errors are JSON: {error, detail, hint}."
    )
    return "\n".join([intro, PROVENANCE_KEYS, *shared, PAGING_PARAMETERS])


def _warm_ups(toolsets: Iterable[FastMCP]) -> list[Callable[[], None]]:
    return [warm_up for toolset in toolsets for warm_up in getattr(toolset, "warm_ups", ())]


def _workspace(settings: Settings) -> list[Path]:
    """The folders a log line may name in full: ADE's home and the dbt project."""
    roots = [settings.home]
    if settings.dbt is not None and settings.dbt.project_dir is not None:
        roots.append(Path(settings.dbt.project_dir))
    return roots


def serve(
    settings: Settings,
    server_name: str | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str | None = None,
    port: int | None = None,
) -> None:
    """Serve until stopped. SIGTERM (service managers, docker, Kubernetes) and SIGHUP stop the gateway as SIGINT
    does: it stops taking calls, waits briefly for calls under way, records their audit runs (flushing the
    journal) and stops the Snowfakery sandbox's processes, then exits."""
    from ade_platform.supervise import stop_on_signals

    # FastMCP keeps per-session state in py-key-value, which type-checks its own internals with beartype at
    # import (warnings only): ~150 ms of the first tools/list on a cold start. Its documented switch turns
    # that off; the gateway keeps no session state of its own.
    os.environ.setdefault("PY_KEY_VALUE_DISABLE_BEARTYPE", "true")
    ctx = BridgeContext.from_settings(settings)
    signalled = False
    try:
        with stop_on_signals():
            if transport == "stdio":
                server = build_server(settings, only=server_name, ctx=ctx, defer=True)
                replay_audit_journal(ctx)
                server.run(transport="stdio", show_banner=False)
                return
            host = host or settings.mcp.http.host
            port = port or settings.mcp.http.port
            server, options = http_gateway(settings, host, port, server_name, ctx=ctx)
            replay_audit_journal(ctx)
            server.run(transport="http", host=host, port=port, show_banner=False, **options)
    except KeyboardInterrupt:
        signalled = True  # the stop signal: what follows is the orderly stop
    finally:
        with stop_on_signals(ignore=True):  # a second signal must not cut the stop short
            stop_gateway()
    if signalled:
        # Stopped by a signal, the interpreter's own exit would wait for threads still blocked in a read (stdin
        # of a host that keeps it open, a call under way in a worker thread): what had to be done is done.
        _exit_now()


def _exit_now() -> None:
    import sys

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    logging.shutdown()
    os._exit(0)


def replay_audit_journal(ctx: BridgeContext) -> None:
    """Record the journaled calls of gateways that died (their audit runs) now, in the background, not at this
    gateway's first live call. Dagster-free unless there is something to replay."""
    from ade_platform.lib.audit_journal import has_orphans

    try:
        if not has_orphans(ctx.settings.dagster_home):
            return
    except OSError:
        return
    threading.Thread(target=ctx.live, name="ade-audit-replay", daemon=True).start()


def stop_gateway() -> None:
    """The orderly stop: the audit runs of calls under way and pending are recorded (what is left stays in the
    journal for the next start), then the Snowfakery sandbox's processes are stopped."""
    import sys

    live = sys.modules.get("ade_platform.live")
    if live is not None:
        live.close_all(timeout=3)
    sandbox = sys.modules.get("ade_platform.lib.snowfakery.sandbox")
    if sandbox is not None:
        sandbox.shutdown()


def http_gateway(
    settings: Settings, host: str, port: int, server_name: str | None = None, ctx: BridgeContext | None = None
) -> tuple[FastMCP, dict[str, Any]]:
    """The gateway as served over HTTP on host:port, and the options of its HTTP app (`server.http_app(**options)`
    or `server.run(transport="http", **options)`)."""
    from mcp_bridge.http_security import http_auth, http_options

    # Checked before anything is built (a ConfigError stops start-up): a token off loopback, the allowed host
    # names when bound to every interface, the identity provider's keys. Every request then passes the
    # Host/Origin guard before its token is looked at.
    auth = http_auth(settings, host, port)
    options = http_options(settings, host, port, auth)
    # Signed-in callers (auth: oidc) get what their roles allow; the shared token and loopback get everything.
    access = AccessControl.from_settings(settings) if settings.mcp.http.auth == "oidc" else None
    server = build_server(settings, only=server_name, ctx=ctx, access=access)
    server.auth = auth
    from mcp_bridge.openlineage_http import add_openlineage_route

    add_openlineage_route(server, settings)  # producers POST OpenLineage events (openlineage.receive)
    return server, options
