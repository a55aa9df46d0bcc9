"""Push across processes and transports: a gateway over HTTP and one over stdio, each a real `ade mcp`, on one
store. An agent on each listens (HTTP: subscriptions/listen, 2026-07-28; stdio: resources/subscribe,
2025-11-25); what one does is heard by the other, and what a third process writes (detection) by both."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from ade_platform.config import Settings
from tests.conftest import REPO_ROOT
from tests.helpers import tool_payload
from tests.mcp.test_incident_tools import detect, finding
from tests.processes import ADE, mcp_over_http

# two real gateways start (about a minute on a loaded machine): in `make test-slow`
pytestmark = [pytest.mark.integration, pytest.mark.slow]
OPEN = "ade://incidents/open"


def _env(settings: Settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ADE_", "DAGSTER_HOME"))}
    return {**env, "ADE_HOME": str(settings.home), "ADE_CONFIG": str(REPO_ROOT / "ade.yaml")}


async def _both(url: str, settings: Settings, ident: str) -> list[tuple[str, str]]:
    from mcp.client.subscriptions import listen

    stdio_heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            await stdio_heard.put(str(root.params.uri))

    stdio = StdioTransport(command=ADE, args=["mcp"], env=_env(settings), cwd=str(REPO_ROOT))
    steps: list[tuple[str, str]] = []
    async with Client(url) as http, Client(stdio, message_handler=on_message, mode="legacy") as local:
        assert http.protocol_version == "2026-07-28" and local.protocol_version == "2025-11-25"
        await local.session.subscribe_resource(OPEN)
        async with listen(http.session, resource_subscriptions=[OPEN]) as sub:
            events = aiter(sub)
            await asyncio.sleep(2.0)  # both watchers' baselines

            async def heard() -> tuple[str, str]:
                over_stdio = await asyncio.wait_for(stdio_heard.get(), 15)
                over_http = await asyncio.wait_for(anext(events), 15)
                return over_stdio, str(over_http.uri)

            args = {"incident_id": ident, "action": "acknowledge", "note": "from stdio"}
            ok, body = tool_payload(await local.call_tool("incident_update", args, raise_on_error=False))
            assert ok, body
            steps.append(await heard())
            args = {"incident_id": ident, "action": "resolve", "cause_was_right": True}
            ok, body = tool_payload(await http.call_tool("incident_update", args, raise_on_error=False))
            assert ok, body
            steps.append(await heard())
            await asyncio.to_thread(
                detect, settings, [finding("dbt:model:orders", "failed_model", "t7")], 3000.0
            )
            steps.append(await heard())
        ok, got = tool_payload(
            await local.call_tool("incident_get", {"incident_id": ident}, raise_on_error=False)
        )
        assert ok and got["status"] == "resolved" and got["timeline"][1]["note"] == "from stdio", got
    return steps


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
def test_what_one_gateway_records_every_other_pushes(tmp_settings: Settings) -> None:
    journal = detect(tmp_settings, [finding("warehouse:demo:table:main.orders", "schema_change", "t1")])
    (ident,) = journal.state().incidents
    with mcp_over_http(_env(tmp_settings)) as (url, _):
        steps = asyncio.run(_both(url, tmp_settings, ident))
    assert steps == [(OPEN, OPEN)] * 3, steps
