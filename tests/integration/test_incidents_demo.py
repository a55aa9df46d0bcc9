"""End to end on the materialized demo: a column renamed under the tiles after materialization becomes one incident
with the right cause and every tile it broke; two listening agents (2025-11-25 resource subscription and
2026-07-28 subscriptions/listen) are told, one more acknowledges and resolves it, both hear that, and a webhook
receiver (a real local HTTP server) gets `opened` and `resolved`, signed.

The monitoring step is what the incidents sensor requests every interval (`incidents.monitor_assets`), run here
in process; detection is the sensor's own tick. Times from the change to each step are printed (docs/INCIDENTS.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import duckdb
import pytest
from fastmcp import Client

from ade_platform.config import IncidentWebhook, Settings
from ade_platform.defs.incidents import incident_tick
from ade_platform.lib.incidents.webhooks import SENDER
from ade_platform.ops import materialize
from ade_platform.store import StoreReader
from ade_platform.store.incidents import IncidentJournal
from mcp_bridge.server import build_server
from tests.helpers import environment, tool_payload

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(1800)]
SECRET = "incident-webhook-test-secret"
MONITORED = "key:bi_health_looker or key:bi_health_metabase or key:warehouse_schema_demo"


class Receiver(BaseHTTPRequestHandler):
    got: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


def _rename(settings: Settings, old: str, new: str) -> None:
    con = duckdb.connect(str(settings.warehouses["demo"].path))  # type: ignore[union-attr]
    try:
        con.execute(f"ALTER TABLE main.orders RENAME COLUMN {old} TO {new}")
    finally:
        con.close()


def _monitor(settings: Settings) -> None:
    with environment({}, unset=["DAGSTER_HOME"]):
        log = io.StringIO()
        assert materialize(settings, MONITORED, out=log) == 0, log.getvalue()[-3000:]


async def _scenario(settings: Settings) -> dict[str, Any]:
    from mcp.client.subscriptions import listen

    server = build_server(settings)
    heard: asyncio.Queue[tuple[str, float]] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            await heard.put((str(root.params.uri), time.time()))

    out: dict[str, Any] = {}
    async with (
        Client(server, message_handler=on_message, mode="legacy") as a,
        Client(server) as b,
        Client(server) as c,
    ):
        await a.session.subscribe_resource("ade://incidents/open")
        async with listen(c.session, resource_subscriptions=["ade://incidents/open"]) as sub:
            events = aiter(sub)
            await asyncio.sleep(1.5)  # the watcher's baseline

            async def both() -> tuple[float, float]:
                _, at_a = await asyncio.wait_for(heard.get(), 15)
                await asyncio.wait_for(anext(events), 15)
                return at_a, time.time()

            out["changed_at"] = time.time()
            await asyncio.to_thread(_rename, settings, "status", "order_status")
            await asyncio.to_thread(_monitor, settings)
            out["monitored_at"] = time.time()
            result = await asyncio.to_thread(incident_tick, settings)
            out["noticed_at"] = time.time()
            out["tick"] = type(result).__name__
            out["heard_open"] = await both()
            ok, listed = tool_payload(
                await b.call_tool("incident_list", {"status": "open"}, raise_on_error=False)
            )
            assert ok, listed
            out["listed"] = listed["incidents"]
            ident = next(i["id"] for i in listed["incidents"] if i["cause"]["cause"] == "schema_change")
            ok, full = tool_payload(
                await b.call_tool("incident_get", {"incident_id": ident}, raise_on_error=False)
            )
            out["incident"] = full
            for action in ("acknowledge", "resolve"):
                args = {"incident_id": ident, "action": action, "note": f"{action} from b"}
                if action == "resolve":
                    args["cause_was_right"] = True
                ok, body = tool_payload(await b.call_tool("incident_update", args, raise_on_error=False))
                assert ok, body
                out[f"heard_{action}"] = await both()
    return out


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
def test_a_renamed_column_under_tiles_is_one_incident_heard_by_listeners_and_people(
    demo_settings: Settings,
) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    hook = IncidentWebhook(url=f"http://127.0.0.1:{httpd.server_port}/hooks/T000/SECRETPATH", secret=SECRET)
    settings = demo_settings.model_copy(
        update={
            "incidents": demo_settings.incidents.model_copy(update={"webhooks": [hook], "poll_seconds": 0.5})
        }
    )
    incident_tick(settings)  # what the demo shows before the change (its designed broken tiles)
    SENDER.flush()
    Receiver.got.clear()
    try:
        out = asyncio.run(_scenario(settings))
    finally:
        _rename(settings, "order_status", "status")
        _monitor(settings)
        incident_tick(settings)
        httpd.shutdown()
    assert SENDER.flush(60)

    incident = out["incident"]
    assert incident["cause"]["cause"] == "schema_change", incident["verdict"]
    assert incident["cause"]["node"].endswith("main.orders"), incident["cause"]
    assert "status" in incident["verdict"] and "order_status" in incident["verdict"], incident["verdict"]
    # every tile whose health check now fails on the renamed column is a symptom of this one incident
    health = StoreReader(settings.store_root)
    broken = set()
    for tool in ("looker", "metabase"):
        for dash in health.latest(f"bi_health_{tool}").data["dashboards"]:
            for el in dash.get("elements") or []:
                if el.get("status") == "error" and "status" in str(el.get("error") or ""):
                    broken.add(f"bi:{tool}:tile:{el['id']}")
    tiles = {s["node"] for s in incident["symptoms"] if s["kind"] == "tile"}
    assert len(tiles) >= 3 and tiles >= broken - {"bi:looker:tile:103", "bi:metabase:tile:12"}, (
        tiles,
        broken,
    )
    schema_incidents = [i for i in out["listed"] if i["cause"]["cause"] == "schema_change"]
    assert len(schema_incidents) == 1, out["listed"]

    events = [(h["x-ade-event"], h) for h, _ in Receiver.got if h["x-ade-incident"] == incident["id"]]
    # opened on a fresh demo; reopened where an earlier run of this test resolved it
    assert [e for e, _ in events] in (["opened", "resolved"], ["reopened", "resolved"]), events
    for headers, body in Receiver.got:
        mac = hmac.new(SECRET.encode(), headers["x-ade-timestamp"].encode() + b"." + body, hashlib.sha256)
        assert headers["x-ade-signature"] == "sha256=" + mac.hexdigest()
    resolved = json.loads(Receiver.got[-1][1])
    assert resolved["incident"]["feedback"]["cause_was_right"] is True

    state = IncidentJournal(StoreReader(settings.store_root).root).state()
    assert state.incidents[incident["id"]]["status"] == "resolved"
    change = out["changed_at"]
    print(
        f"\nfrom the change: monitored {out['monitored_at'] - change:.1f} s, noticed {out['noticed_at'] - change:.1f} s,"
        f" heard (2025-11-25) {out['heard_open'][0] - change:.1f} s, heard (listen) {out['heard_open'][1] - change:.1f} s;"
        f" after noticing: {out['heard_open'][0] - out['noticed_at']:.1f} s / {out['heard_open'][1] - out['noticed_at']:.1f} s"
    )
