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
    # Who builds the mart: dbt Cloud's daily job (from its `dbt build --select`) and Dagster's own asset job.
    builds = {(e["from"], e["to"], e["how"]) for e in lineage["edges"] if e["kind"] == "builds"}
    assert ("dbt_cloud:job:7301", "dbt:model.dbt_demo.customers", "selector") in builds, sorted(builds)
    assert ("dagster:job:__ASSET_JOB", "dbt:model.dbt_demo.customers", "asset_selection") in builds
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


def test_demo_dashboard_chain_and_the_planted_broken_tile(demo_settings: Settings) -> None:
    """From a Metabase dashboard id alone: the chain to the sources in one call; the planted broken tile (a
    column its table does not have) traced to the model and the column."""
    server = build_server(demo_settings)
    ok, chain = call_tool(
        server,
        "lineage_trace",
        {"start_kind": "dashboard", "start": "1", "system": "metabase", "direction": "upstream"},
    )
    assert ok, chain
    kinds = {(n["system"], n["kind"]) for n in chain["nodes"]}
    assert {
        ("metabase", "dashboard"),
        ("metabase", "tile"),
        ("warehouse", "table"),
        ("dbt", "model"),
    } <= kinds
    assert ("dbt", "source") in kinds
    tiles = {n["name"]: n for n in chain["nodes"] if n["kind"] == "tile"}
    assert tiles["Orders by Discount Code"]["status"] == "failed"
    assert {e["how"] for e in chain["edges"]} >= {"sql_parse", "relation_match", "manifest", "inventory"}
    broken_id = tiles["Orders by Discount Code"]["id"].rsplit(":", 1)[-1]
    ok, incident = call_tool(
        server, "lineage_explain_incident", {"start_kind": "tile", "start": broken_id, "system": "metabase"}
    )
    assert ok, incident
    top = incident["causes"][0]
    assert top["cause"] == "tile_references_missing_column"
    assert top["evidence"]["missing_columns"] == ["discount_code"]
    assert "dbt:model.dbt_demo.orders" in top["evidence"]["models"]
    symptom = incident["symptom"]
    assert symptom["status"] == "error" and symptom["observed"]["source"] == "live", symptom  # run now
    assert (symptom["error_kind"], symptom["columns"]) == ("missing_column", ["discount_code"])
    assert incident["confidence"] == "high" and "discount_code" in incident["verdict"]
