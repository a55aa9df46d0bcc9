"""The gateway's first answers from disk: `ade mcp` lists its tools before it builds its toolsets.

An MCP host starts the gateway, initializes and lists the tools, then shows them to its model; nothing else is
asked until the model has read them. Building the ten toolsets (importing their modules, creating 68 tools, their
resources and prompts) is most of what the gateway adds to a bare FastMCP server's start-up, and what it
produces for the listing only changes with the code, the libraries and the settings. So a stdio gateway writes
what it served at its first tools/list to `<home>/cache/tool-schemas/gateway-<key>.json`, under the key of the
schema cache (mcp_bridge/tool_schemas.py: sources, library versions, settings), and a later start with the same
key answers initialize and tools/list from that file and builds the toolsets right after, in a worker thread.

Every other request waits for the build (`DeferredToolsets.on_request`): a tool call, a resource read, a
prompt, a subscription, a task query is answered by the real toolsets, never from the file. When the build is
done the real listing is compared with the one served: if they differ (a change the key cannot see), the file
is rewritten and the sessions that were served the old listing get `notifications/tools/list_changed`.

Only the stdio gateway with every configured toolset uses this (`ade mcp`, `serve(defer=True)`): signed-in
HTTP callers get per-role listings, and in-process servers (tests, the benchmarks) are built as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from fastmcp.server.middleware import Middleware

from mcp_bridge.errors import ToolFailure
from mcp_bridge.tool_schemas import cache_key

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from mcp import types

    from ade_platform.config import Settings

log = logging.getLogger("ade.mcp")
_FORMAT = 1
# Requests answered without the toolsets: the handshake, liveness, and the listing itself (from the file).
_WITHOUT_TOOLSETS = frozenset({"initialize", "server/discover", "ping", "tools/list", "logging/setLevel"})
# The build starts this long after the listing was answered, so the host reads the listing before the build's
# imports compete with writing it for the interpreter.
BUILD_DELAY_SECONDS = 0.05


@dataclass(frozen=True)
class Listing:
    """What a start served before its toolsets were needed: the tools as on the wire, the instructions, and
    whether any tool may run as a task (the tasks extension is advertised at initialize)."""

    tools: list[dict[str, Any]]
    instructions: str
    tasks: bool


def listing_path(settings: Settings) -> Path:
    return (
        settings.home / "cache" / "tool-schemas" / f"gateway-{cache_key(settings, '<gateway listing>')}.json"
    )


def load_listing(settings: Settings) -> Listing | None:
    """The listing written by an earlier start with the same code and settings; None when there is none."""
    try:
        document = json.loads(listing_path(settings).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != _FORMAT:
        return None
    tools, instructions = document.get("tools"), document.get("instructions")
    if not isinstance(tools, list) or not all(
        isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools
    ):
        return None
    if not isinstance(instructions, str):
        return None
    return Listing(tools, instructions, bool(document.get("tasks")))


def save_listing(settings: Settings, listing: Listing) -> None:
    """Written atomically (a replica starting now reads the old file or the new one); older keys' files go."""
    path = listing_path(settings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {
            "format": _FORMAT,
            "tools": listing.tools,
            "instructions": listing.instructions,
            "tasks": listing.tasks,
        }
        fd, tmp = tempfile.mkstemp(prefix=".gateway-", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, sort_keys=True)
        os.replace(tmp, path)
        for stale in path.parent.glob("gateway-*.json"):
            if stale != path:
                stale.unlink(missing_ok=True)
    except OSError as error:  # a read-only home only costs the next start its build before the listing
        log.debug("gateway listing not written: %s", error)


def wire_form(tools: Any) -> list[dict[str, Any]]:
    """FastMCP tools as the tools/list result carries them (the handler's own conversion)."""
    return [
        tool.to_mcp_tool(name=tool.name).model_dump(mode="json", by_alias=True, exclude_none=True)
        for tool in tools
    ]


class ListedTool:
    """A tool of the listing file, as FastMCP's tools/list handler needs it: a name, no version, and its wire
    form. Never called: calls wait for the real toolsets."""

    version = None

    def __init__(self, entry: dict[str, Any]):
        self.name: str = entry["name"]
        self.entry = entry

    def to_mcp_tool(self, **_: Any) -> types.Tool:
        from mcp import types

        return types.Tool.model_validate(self.entry)


class RecordListing(Middleware):
    """On a start that built its toolsets first: writes what the first tools/list served, off the request's
    path, so the next start can answer from it."""

    def __init__(self, settings: Settings, instructions: str, tasks: bool):
        self.settings = settings
        self.instructions = instructions
        self.tasks = tasks
        self.recorded = False

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        tools = await call_next(context)
        if not self.recorded:
            self.recorded = True
            listing = Listing(wire_form(tools), self.instructions, self.tasks)
            # not a daemon: a host that lists and quits at once still leaves the file for the next start
            threading.Thread(target=save_listing, args=(self.settings, listing), name="ade-listing").start()
        return tools


class DeferredToolsets(Middleware):
    """Serves tools/list from the listing file until the toolsets are built; every other request waits for
    them. The build runs `build` in a worker thread, then `adopt` on the event loop (FastMCP's registries are
    not shared with a thread while requests read them)."""

    def __init__(
        self,
        server: FastMCP,
        settings: Settings,
        listing: Listing,
        build: Callable[[], Any],
        adopt: Callable[[Any], None],
    ):
        self.server = server
        self.settings = settings
        self.listing = listing
        self._build_toolsets = build
        self._adopt = adopt
        self._built: asyncio.Future[None] | None = None
        self._failed: BaseException | None = None
        self._served_from_file: list[Any] = []  # sessions told the file's listing

    @property
    def built(self) -> bool:
        return self._built is not None and self._built.done() and self._failed is None

    async def ensure(self) -> None:
        """The toolsets, built once; a request that arrives during the build waits for it."""
        built = self._start()
        await asyncio.shield(built)
        if self._failed is not None:
            raise ToolFailure(
                "internal_error",
                f"the gateway could not build its toolsets ({type(self._failed).__name__})",
                "Run `ade mcp` from a terminal to see why; the settings or the environment changed.",
            )

    async def _build(self) -> None:
        try:
            toolsets = await anyio.to_thread.run_sync(self._build_toolsets)
            self._adopt(toolsets)
        except Exception as exc:  # kept: every request that needs the toolsets says so
            # one line with the exception's type; the traceback only at DEBUG (mcp_bridge/log_hygiene.py)
            log.error("building the toolsets failed", exc_info=exc)
            self._failed = exc
            return
        try:
            await self._check_listing()
        except Exception as exc:  # the toolsets serve; only the check of the file is lost
            log.warning("the cached tool listing could not be checked", exc_info=exc)

    async def _check_listing(self) -> None:
        """The file must say what the toolsets say; when it does not, it is rewritten and the sessions told."""
        served, self._served_from_file = self._served_from_file, []
        real = wire_form(await self.server.list_tools(run_middleware=False))
        if real == self.listing.tools:
            return
        log.warning("the cached tool listing was out of date; rewritten, and the clients told")
        self.listing = Listing(real, self.listing.instructions, self.listing.tasks)
        await anyio.to_thread.run_sync(save_listing, self.settings, self.listing)
        for session in served:
            with contextlib.suppress(Exception):  # a session that has gone needs no notice
                await session.send_tool_list_changed()

    def start_soon(self) -> None:
        if self._built is None:
            asyncio.get_running_loop().call_later(BUILD_DELAY_SECONDS, self._start)

    def _start(self) -> asyncio.Future[None]:
        if self._built is None:
            self._built = asyncio.ensure_future(self._build())
        return self._built

    async def on_request(self, context: Any, call_next: Any) -> Any:
        if context.method not in _WITHOUT_TOOLSETS and not self.built:
            await self.ensure()
        return await call_next(context)

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        if self.built:
            return await call_next(context)
        session = getattr(context.fastmcp_context, "session", None) if context.fastmcp_context else None
        if session is not None:
            self._served_from_file.append(session)
        self.start_soon()
        return [ListedTool(entry) for entry in self.listing.tools]
