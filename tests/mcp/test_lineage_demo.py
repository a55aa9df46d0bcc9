"""Cross-stack lineage on the materialized demo: the asset is built in the same run as its inputs, and the
trace from a mart reaches the warehouse tables and the sources, with health from the demo's own build."""

from __future__ import annotations

import pytest

from ade_platform.config import Settings
from ade_platform.lib.lineage.sources import LINEAGE_ASSET
from ade_platform.store import StoreReader
from mcp_bridge.server import build_server
from tests.helpers import call_tool

pytestmark = pytest.mark.integration


def test_demo_lineage_trace_and_incident(demo_settings: Settings) -> None:
    lineage = StoreReader(demo_settings.store_root).latest(LINEAGE_ASSET).data
    assert {"dbt_lineage_index", "warehouse_schema_demo"} <= set(lineage["inputs"])
    server = build_server(demo_settings)
    ok, body = call_tool(
        server, "lineage_trace", {"start_kind": "dbt_node", "start": "customers", "direction": "upstream"}
    )
    assert ok, body
    by_id = {n["id"]: n for n in body["nodes"]}
    sources = [n for n in body["nodes"] if n["kind"] == "source"]
    # health of a source is its freshness from the demo's own `dbt source freshness`
    assert sources and any((n["health"] or {}).get("freshness_status") for n in sources)
    tables = [n for n in body["nodes"] if n["system"] == "warehouse"]
    assert any(n["name"].endswith("raw.customers") for n in tables), sorted(by_id)
    assert by_id[body["start"]]["health"]["run_status"] == "success"
    ok, body = call_tool(server, "lineage_explain_incident", {"start_kind": "dbt_node", "start": "customers"})
    assert ok and body["provenance"]["asset"] == LINEAGE_ASSET
