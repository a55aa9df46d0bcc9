"""Push over MCP: a listening agent is told when an incident opens, changes or resolves.

FastMCP serves no subscriptions, so this module registers the SDK's handlers on the gateway's low-level server:
- `resources/subscribe` / `resources/unsubscribe` (2025-11-25): a subscriber of `ade://incidents/open` or of
  `ade://incidents/<id>` gets `notifications/resources/updated` for that URI;
- `subscriptions/listen` (2026-07-28), the SDK's `ListenHandler` over a bus of our own that applies access.
One watcher per gateway polls the store's incident journal (a stat every `incidents.poll_seconds`), so whichever
process wrote the change (the daemon's sensor, another replica, this one) every replica pushes it. Each listener
only hears of incidents whose symptoms reach a toolset it may read (the incident tools' rule). Bounded: at most
`incidents.max_listeners` per gateway (more are refused); each has a backlog of `incidents.listener_backlog`
unsent updates, past which it is dropped (it subscribes again and reads the resource), never buffered without
limit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from mcp import types
from mcp.server.subscriptions import ListenHandler, ResourceUpdated, ServerEvent
from mcp.shared.exceptions import MCPError

from ade_platform.lib.caller import Caller
from mcp_bridge.access import caller_of

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from ade_platform.config import Settings
    from mcp_bridge.toolsets.incidents.service import IncidentService

log = logging.getLogger("ade.push")
OPEN_URI = "ade://incidents/open"
PREFIX = "ade://incidents/"


def uris_of(inc: dict[str, Any]) -> list[str]:
    """The resources a change of this incident updates (`open`: it is, or just stopped being, in that list)."""
    return [OPEN_URI, PREFIX + inc["id"]]


def connection_of(ctx: Any) -> Any:
    """The client connection a request came on: what a subscription belongs to. The SDK makes a ServerSession
    per request (so two requests of one client have two), and shows low-level handlers the connection only
    through it."""
    return getattr(ctx.session, "_connection", ctx.session)


@dataclass
class Subscriber:
    """One connection's resource subscriptions (2025-11-25), with its own bounded backlog and sender task."""

    session: Any
    visible: Callable[[dict[str, Any]], bool]
    uris: set[str] = field(default_factory=set)
    backlog: asyncio.Queue[str] | None = None
    task: asyncio.Task[None] | None = None


class AccessBus:
    """The `subscriptions/listen` bus: each listen stream registers with its caller's filter."""

    def __init__(self, push: IncidentPush):
        self.push = push
        self.listeners: dict[
            object, tuple[Callable[[ServerEvent], None], Callable[[dict[str, Any]], bool]]
        ] = {}

    async def publish(self, event: ServerEvent) -> None:  # unused: changes come from the watcher
        for listener, _ in list(self.listeners.values()):
            listener(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self.listeners[token] = (listener, self.push.visible_to_caller())
        self.push.ensure_watching()
        return lambda: self.listeners.pop(token, None)  # type: ignore[return-value]

    def deliver(self, inc: dict[str, Any]) -> None:
        for listener, visible in list(self.listeners.values()):
            if visible(inc):
                for uri in uris_of(inc):
                    listener(ResourceUpdated(uri=uri))


class IncidentPush:
    def __init__(self, settings: Settings):
        cfg = settings.incidents
        self.oidc = settings.mcp.http.oidc
        # the incidents toolset's, set when it is built; its handlers run only after that (mcp_bridge/listing.py)
        self.service: IncidentService | None = None
        self.poll = cfg.poll_seconds
        self.max_listeners = cfg.max_listeners
        self.backlog = cfg.listener_backlog
        self.subscribers: dict[int, Subscriber] = {}
        self.bus = AccessBus(self)
        self.listen = ListenHandler(
            self.bus, max_subscriptions=cfg.max_listeners, max_buffered_events=cfg.listener_backlog
        )
        self._watcher: asyncio.Task[None] | None = None
        self._revisions: dict[str, int] | None = None
        self.dropped = 0

    def incidents(self) -> IncidentService:
        if self.service is None:
            raise RuntimeError("the incidents toolset is not built yet")
        return self.service

    # ---- who listens ------------------------------------------------------------------------------------
    def visible_to_caller(self) -> Callable[[dict[str, Any]], bool]:
        from fastmcp.server.dependencies import get_access_token

        caller: Caller = caller_of(get_access_token(), self.oidc)
        return self.incidents().visible_to(caller)

    def listeners(self) -> int:
        return len(self.subscribers) + len(self.bus.listeners)

    async def on_subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        if not uri.startswith(PREFIX):
            return types.EmptyResult()  # no other resource changes while served: nothing will ever be pushed
        connection = connection_of(ctx)
        key = id(connection)
        sub = self.subscribers.get(key)
        if sub is None:
            if self.listeners() >= self.max_listeners:
                raise MCPError(types.INTERNAL_ERROR, f"listener limit reached ({self.max_listeners})")
            sub = Subscriber(ctx.session, self.visible_to_caller(), backlog=asyncio.Queue(self.backlog))
            sub.task = asyncio.get_running_loop().create_task(self._send(key, sub))
            self.subscribers[key] = sub
            # a client that goes without unsubscribing frees its slot when its connection closes, not at the
            # next push that fails to reach it
            teardown = getattr(connection, "exit_stack", None)
            if teardown is not None:
                teardown.callback(self._drop, key, None)
        sub.uris.add(uri)
        self.ensure_watching()
        return types.EmptyResult()

    async def on_unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        key = id(connection_of(ctx))
        sub = self.subscribers.get(key)
        if sub is not None:
            sub.uris.discard(str(params.uri))
            if not sub.uris:
                self._drop(key, why=None)
        return types.EmptyResult()

    def _drop(self, key: int, why: str | None) -> None:
        sub = self.subscribers.pop(key, None)
        if sub is not None and sub.task is not None:
            sub.task.cancel()
        if why:
            self.dropped += 1
            log.warning("incident_listener_dropped: %s", why)

    async def _send(self, key: int, sub: Subscriber) -> None:
        assert sub.backlog is not None
        while True:
            uri = await sub.backlog.get()
            try:
                await sub.session.send_resource_updated(uri)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                self._drop(key, why=None)  # the session ended
                return

    # ---- the watcher ------------------------------------------------------------------------------------
    def ensure_watching(self) -> None:
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        token = object()
        while self.listeners():
            now = await anyio.to_thread.run_sync(self.incidents().journal.token)
            if now != token:
                token = now
                with contextlib.suppress(Exception):  # a journal mid-compaction: the next poll reads it whole
                    state = await anyio.to_thread.run_sync(self.incidents().state)
                    self.changed(state.incidents)
            await asyncio.sleep(self.poll)
        self._watcher = None

    def changed(self, incidents: dict[str, dict[str, Any]]) -> None:
        """Push every incident whose revision moved since the last look (nothing on the first look)."""
        revisions = {ident: inc["revision"] for ident, inc in incidents.items()}
        before, self._revisions = self._revisions, revisions
        if before is None:
            return
        for ident, rev in revisions.items():
            if before.get(ident) != rev:
                self.publish(incidents[ident])

    def publish(self, inc: dict[str, Any]) -> None:
        self.bus.deliver(inc)
        for key, sub in list(self.subscribers.items()):
            if not sub.visible(inc):
                continue
            for uri in uris_of(inc):
                if uri in sub.uris:
                    try:
                        sub.backlog.put_nowait(uri)  # type: ignore[union-attr]
                    except asyncio.QueueFull:
                        self._drop(key, why=f"a subscriber left {self.backlog} updates unread")
                        break


def install(gateway: FastMCP, settings: Settings) -> IncidentPush:
    """Serve resource subscriptions and `subscriptions/listen` on the gateway's low-level server; the caller
    sets `service` to the incidents toolset's."""
    push = IncidentPush(settings)
    low = gateway._mcp_server  # FastMCP has no subscription API; the SDK's server takes the handlers
    low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, push.on_subscribe)
    low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, push.on_unsubscribe)
    low.add_request_handler("subscriptions/listen", types.SubscriptionsListenRequestParams, push.listen)
    return push
