"""Warm-ups (mcp_bridge/startup.py) start once the gateway's first tools/list is answered, never while it starts,
and the middleware that starts them leaves the chain after that listing."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from fastmcp import Client

from ade_platform.config import load_settings
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from mcp_bridge.startup import AfterFirstListing
from mcp_bridge.toolsets import build_toolset
from tests.conftest import REPO_ROOT


def test_warm_ups_start_after_the_first_listing_and_only_once(tmp_path: Path) -> None:
    settings = load_settings(REPO_ROOT / "ade.yaml", env={"ADE_HOME": str(tmp_path)})
    ctx = BridgeContext.from_settings(settings)
    snowfakery = build_toolset("snowfakery", ctx)
    assert snowfakery.warm_ups, "the snowfakery toolset registers its warm-up instead of running it"

    gateway = build_server(settings, ctx=ctx)
    hook = next(m for m in gateway.middleware if isinstance(m, AfterFirstListing))
    started: list[str] = []
    ran = threading.Event()

    def warm_up() -> None:
        started.append(f"{threading.current_thread().name}, listed: {hook.listed}")
        ran.set()

    hook.warm_ups[:] = [warm_up]  # the gateway's own warm-ups would start the Snowfakery sandbox

    async def session() -> None:
        async with Client(gateway) as client:
            assert not hook.listed and not started  # connected and initialized: nothing started yet
            await client.list_tools()
            await client.list_tools()
            # the warm-ups start a moment after the listing, on this loop: keep it running until they have
            assert await asyncio.to_thread(ran.wait, 30), "the warm-up never started"

    asyncio.run(session())
    assert started == ["ade-warm-up, listed: True"]
    assert hook not in gateway.middleware, "the one-shot middleware stays on every later call's path"
