"""The push's bounds (mcp_bridge/push.py): a subscriber that does not read is dropped once its backlog is full,
never buffered without limit, and listeners past `incidents.max_listeners` are refused."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from ade_platform.config import Settings
from mcp_bridge.context import BridgeContext
from mcp_bridge.push import OPEN_URI, IncidentPush
from mcp_bridge.toolsets.incidents.service import IncidentService


class Session:
    """A client session: `stuck` ones never finish a write (a listener that stopped reading)."""

    def __init__(self, stuck: bool):
        self.stuck, self.sent = stuck, []

    async def send_resource_updated(self, uri: str) -> None:
        if self.stuck:
            await asyncio.Event().wait()
        self.sent.append(uri)


def _push(settings: Settings, **bounds: Any) -> IncidentPush:
    cfg = settings.incidents.model_copy(update=bounds)
    settings = settings.model_copy(update={"incidents": cfg})
    push = IncidentPush(settings)
    push.service = IncidentService(BridgeContext.from_settings(settings))
    return push


def _incident(n: int) -> dict[str, Any]:
    return {"id": f"inc-{n:012d}", "revision": n, "symptoms": []}


def test_a_listener_that_does_not_read_is_dropped(tmp_settings: Settings) -> None:
    async def go() -> tuple[int, int, list[str]]:
        push = _push(tmp_settings, listener_backlog=3)
        slow, fine = Session(stuck=True), Session(stuck=False)
        for session in (slow, fine):
            await push.on_subscribe(
                SimpleNamespace(session=session), types.SubscribeRequestParams(uri=OPEN_URI)
            )
        for n in range(10):
            push.publish(_incident(n))
            await asyncio.sleep(0.01)
        return push.listeners(), push.dropped, fine.sent

    listeners, dropped, sent = asyncio.run(go())
    assert (listeners, dropped) == (1, 1)  # the stuck one went; the reader stayed and got every update
    assert sent == [OPEN_URI] * 10


def test_listeners_past_the_bound_are_refused(tmp_settings: Settings) -> None:
    async def go() -> None:
        push = _push(tmp_settings, max_listeners=2)
        for _ in range(2):
            await push.on_subscribe(
                SimpleNamespace(session=Session(stuck=False)), types.SubscribeRequestParams(uri=OPEN_URI)
            )
        with pytest.raises(MCPError, match="listener limit"):
            await push.on_subscribe(
                SimpleNamespace(session=Session(stuck=False)), types.SubscribeRequestParams(uri=OPEN_URI)
            )

    asyncio.run(go())
