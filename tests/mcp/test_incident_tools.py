"""The incident tools, resources and push through the MCP protocol: two real client sessions on one gateway
(in memory), the journal written as detection writes it; one acknowledges and resolves, the other hears it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from fastmcp import Client

from ade_platform.config import Settings
from ade_platform.lib.incidents.grouping import Finding, Policy, reconcile
from ade_platform.store import StoreReader
from ade_platform.store.incidents import IncidentJournal
from mcp_bridge.server import build_server
from tests.helpers import call_tools, tool_payload


def finding(node: str, cause: str, tile: str, system: str = "looker") -> Finding:
    return Finding(
        node=node,
        cause=cause,
        cause_detail={"object": node, "change": "renamed status to order_status"},
        symptom={
            "node": f"{system}:tile:{tile}",
            "kind": "tile",
            "name": tile,
            "system": system,
            "status": "failed",
        },
        verdict=f"tile {tile} fails: missing column. Cause: {node} renamed.",
        confidence="high",
        systems={system, "warehouse", "dbt"},
    )


def detect(settings: Settings, findings: list[Finding], at: float = 1000.0) -> IncidentJournal:
    journal = IncidentJournal(StoreReader(settings.store_root).root)
    journal.change(lambda s: reconcile(s, findings, at, Policy()).events)
    return journal


@pytest.fixture
def two_incidents(tmp_settings: Settings) -> tuple[Settings, list[str]]:
    journal = detect(
        tmp_settings,
        [
            finding("warehouse:demo:table:main.orders", "schema_change", "t1"),
            finding("warehouse:demo:table:main.orders", "schema_change", "t2"),
            finding("dbt:source:raw.payments", "stale_source", "t9", system="metabase"),
        ],
    )
    return tmp_settings, sorted(journal.state().incidents)


def test_list_get_update_and_refusals(two_incidents: tuple[Settings, list[str]]) -> None:
    settings, ids = two_incidents
    server = build_server(settings)
    listed, one, looker = call_tools(
        server,
        [
            ("incident_list", {"status": "active"}),
            ("incident_get", {"incident_id": ids[0]}),
            ("incident_list", {"system": "looker"}),
        ],
    )
    assert listed[0] and sorted(i["id"] for i in listed[1]["incidents"]) == ids
    assert listed[1]["total"] == 2 and listed[1]["truncated"] is False
    assert one[0] and one[1]["status"] == "open" and one[1]["timeline"][0]["event"] == "opened"
    assert [i["cause"]["cause"] for i in looker[1]["incidents"]] == ["schema_change"]
    orders = looker[1]["incidents"][0]["id"]
    ack, again, resolved, bad, missing, wrong = call_tools(
        server,
        [
            ("incident_update", {"incident_id": orders, "action": "acknowledge", "note": "on it"}),
            ("incident_update", {"incident_id": orders, "action": "acknowledge"}),
            ("incident_update", {"incident_id": orders, "action": "resolve", "cause_was_right": True}),
            ("incident_update", {"incident_id": orders, "action": "acknowledge"}),
            ("incident_get", {"incident_id": "inc-000000000000"}),
            ("incident_update", {"incident_id": orders, "action": "reopen", "cause_was_right": False}),
        ],
    )
    assert ack[0] and ack[1]["status"] == "acknowledged", ack
    assert ack[1]["timeline"][-1]["note"] == "on it" and ack[1]["provenance"]["run_id"]
    assert not again[0] and again[1]["error"] == "invalid_transition"
    assert resolved[0] and resolved[1]["feedback"]["cause_was_right"] is True
    assert not bad[0] and bad[1]["error"] == "invalid_transition" and bad[1]["status"] == "resolved"
    assert not missing[0] and missing[1]["error"] == "incident_not_found"
    assert not wrong[0] and wrong[1]["error"] == "invalid_transition"
    assert sorted(e["event"] for e in resolved[1]["timeline"]) == ["acknowledged", "opened", "resolved"]


async def _listen_and_act(server: Any, ident: str, settings: Settings) -> list[tuple[str, str]]:
    """Client A subscribes to the open incidents (2025-11-25: resources/subscribe), client C listens
    (2026-07-28: subscriptions/listen); client B acknowledges then resolves, then detection opens one more.
    Returns what A and C were told after each step."""
    from mcp.client.subscriptions import listen

    legacy: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            await legacy.put(str(root.params.uri))

    steps = []
    async with (
        Client(server, message_handler=on_message, mode="legacy") as a,
        Client(server) as b,
        Client(server) as c,
    ):
        assert a.protocol_version == "2025-11-25" and c.protocol_version == "2026-07-28"
        await a.session.subscribe_resource("ade://incidents/open")
        async with listen(c.session, resource_subscriptions=["ade://incidents/open"]) as sub:
            events = aiter(sub)
            await asyncio.sleep(0.5)  # the watcher's first look (its baseline)

            async def both() -> tuple[str, str]:
                heard_a = await asyncio.wait_for(legacy.get(), 10)
                heard_c = await asyncio.wait_for(anext(events), 10)
                return heard_a, str(heard_c.uri)

            for action in ("acknowledge", "resolve"):
                args = {"incident_id": ident, "action": action}
                ok, body = tool_payload(await b.call_tool("incident_update", args, raise_on_error=False))
                assert ok, body
                steps.append(await both())
            detect(settings, [finding("dbt:model:orders", "failed_model", "t3")], at=2000.0)
            steps.append(await both())
        opened = await b.read_resource("ade://incidents/open")
        one = json.loads((await b.read_resource(f"ade://incidents/{ident}"))[0].text)
        assert one["id"] == ident and one["status"] == "resolved" and one["timeline"], one
    steps.append(("open", opened[0].text))
    return steps


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
def test_listening_clients_hear_what_another_does(two_incidents: tuple[Settings, list[str]]) -> None:
    settings, ids = two_incidents
    steps = asyncio.run(_listen_and_act(build_server(settings), ids[0], settings))
    assert steps[:3] == [("ade://incidents/open", "ade://incidents/open")] * 3, steps
    assert "failed_model" in steps[3][1]


def test_a_refused_transition_records_no_audit_run(two_incidents: tuple[Settings, list[str]]) -> None:
    """A transition that cannot apply is refused before the audited run: only the accepted update is a run."""
    import sys

    from dagster import RunsFilter

    from ade_platform.live import TAG_TOOL
    from mcp_bridge.context import BridgeContext

    settings, ids = two_incidents
    server = build_server(settings)
    answers = call_tools(
        server,
        [
            ("incident_update", {"incident_id": ids[0], "action": "reopen"}),
            ("incident_update", {"incident_id": ids[0], "action": "acknowledge", "cause_was_right": True}),
            ("incident_update", {"incident_id": ids[0], "action": "acknowledge"}),
        ],
    )
    assert [a[1].get("error") for a in answers] == ["invalid_transition", "invalid_transition", None], answers
    sys.modules["ade_platform.live"].flush_all(120)
    instance = BridgeContext.from_settings(settings).live().instance()
    runs = instance.get_runs(filters=RunsFilter(tags={TAG_TOOL: "incident_update"}))
    assert len(runs) == 1, [dict(r.tags) for r in runs]


async def _subscribe_unsubscribe_and_leave(server: Any, ident: str) -> dict[str, Any]:
    """One client (2025-11-25) subscribes to two resources in two requests, then unsubscribes one at a time;
    another subscribes and leaves without unsubscribing. What the gateway's push counted and what was heard."""
    heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            await heard.put(str(root.params.uri))

    push = server.incident_push
    seen: dict[str, Any] = {}
    async with Client(server, message_handler=on_message, mode="legacy") as a, Client(server) as b:
        await a.session.subscribe_resource("ade://incidents/open")
        await a.session.subscribe_resource(f"ade://incidents/{ident}")
        seen["listeners, one client on two resources"] = push.listeners()
        await asyncio.sleep(0.5)  # the watcher's baseline
        await a.session.unsubscribe_resource("ade://incidents/open")
        await b.call_tool("incident_update", {"incident_id": ident, "action": "acknowledge"})
        seen["heard after unsubscribing open"] = [await asyncio.wait_for(heard.get(), 10)]
        await asyncio.sleep(0.5)  # nothing else comes: not the open list any more
        while not heard.empty():
            seen["heard after unsubscribing open"].append(heard.get_nowait())
        await a.session.unsubscribe_resource(f"ade://incidents/{ident}")
        seen["listeners after unsubscribing both"] = push.listeners()
    async with Client(server, mode="legacy") as gone:
        await gone.session.subscribe_resource("ade://incidents/open")
        seen["listeners while another is subscribed"] = push.listeners()
    await asyncio.sleep(0.1)
    seen["listeners after it left without unsubscribing"] = push.listeners()
    return seen


@pytest.mark.filterwarnings(
    "ignore:resources/subscribe is removed", "ignore:resources/unsubscribe is removed"
)
def test_subscriptions_belong_to_the_client_and_end_with_it(
    two_incidents: tuple[Settings, list[str]],
) -> None:
    settings, ids = two_incidents
    seen = asyncio.run(_subscribe_unsubscribe_and_leave(build_server(settings), ids[0]))
    assert seen == {
        "listeners, one client on two resources": 1,
        "heard after unsubscribing open": [f"ade://incidents/{ids[0]}"],
        "listeners after unsubscribing both": 0,
        "listeners while another is subscribed": 1,
        "listeners after it left without unsubscribing": 0,
    }, seen
