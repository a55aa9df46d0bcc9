"""lineage_trace and lineage_explain_incident through MCP, on a store built from a project of the test's own (a
small shop with a Looker dashboard, a dbt Cloud job, an Airflow DAG) — not the demo."""

from __future__ import annotations

import pytest

from ade_platform.config import Settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.lineage.sources import LINEAGE_ASSET, Topology, build_graph, store_read
from ade_platform.store import StoreReader, StoreWriter
from mcp_bridge.server import build_server
from tests.helpers import call_tool, call_tools
from tests.unit.test_lineage_cross_stack import P, _inputs, _manifest


def _publish_project(settings: Settings, *, failed: bool, stale: bool) -> None:
    writer = StoreWriter(settings.store_root)
    index = build_lineage_index(_manifest())
    inputs = _inputs(index)
    writer.publish("dbt_lineage_index", index)
    writer.publish("warehouse_schema_demo", inputs.warehouses["wh"].snapshot)
    writer.publish("bi_inventory_looker", inputs.bi["looker"])
    writer.publish("dbt_cloud_jobs", inputs.dbt_cloud_jobs)
    writer.publish("orchestrator_runs_airflow", inputs.orchestrators["airflow"])
    results = [{"unique_id": f"model.{P}.stg_orders", "status": "success"}]
    if failed:
        results = [
            {"unique_id": f"model.{P}.stg_orders", "status": "error", "message": "Binder Error: column x"},
            {"unique_id": f"model.{P}.orders", "status": "skipped"},
            {"unique_id": f"model.{P}.revenue", "status": "skipped"},
        ]
    writer.publish(
        "dbt_run_results", {"metadata": {"generated_at": "2026-01-01T00:00:00Z"}, "results": results}
    )
    writer.publish(
        "dbt_sources",
        {"results": [{"unique_id": f"source.{P}.raw.orders", "status": "error" if stale else "pass"}]},
    )
    writer.publish(
        "bi_health_looker",
        {
            "tool": "looker",
            "dashboards": [
                {
                    "id": "7",
                    "status": "error",
                    "elements": [
                        {"id": "70", "status": "ok", "row_count": 30},
                        {"id": "72", "status": "error", "error": "Referenced column discount not found"},
                    ],
                }
            ],
        },
    )


def _publish_lineage(settings: Settings) -> None:
    read = store_read(StoreReader(settings.store_root))
    topo = Topology({"demo": "duckdb"}, "demo")
    StoreWriter(settings.store_root).publish(LINEAGE_ASSET, build_graph(read, topo))


@pytest.fixture
def server(tmp_settings: Settings):
    _publish_project(tmp_settings, failed=True, stale=True)
    _publish_lineage(tmp_settings)
    return build_server(tmp_settings, only="lineage")


def test_trace_from_a_dashboard_reaches_sources_and_builders(server) -> None:
    ok, body = call_tool(
        server, "lineage_trace", {"start_kind": "dashboard", "start": "7", "direction": "upstream"}
    )
    assert ok, body
    by_id = {n["id"]: n for n in body["nodes"]}
    assert body["start"] == "bi:looker:dashboard:7"
    assert f"dbt:source.{P}.raw.orders" in by_id and "warehouse:demo:table:wh.raw.orders" in by_id
    revenue = by_id[f"dbt:model.{P}.revenue"]
    assert (
        revenue["built_by"][0]["builder"] == "dbt_cloud:job:42"
        and revenue["built_by"][0]["how"] == "selector"
    )
    assert by_id[f"dbt:model.{P}.stg_orders"]["status"] == "failed"
    assert by_id[f"dbt:source.{P}.raw.orders"]["status"] == "stale"
    assert {e["how"] for e in body["edges"]} >= {"sql_parse", "relation_match", "manifest", "inventory"}
    prov = body["provenance"]
    assert prov["asset"] == LINEAGE_ASSET and prov["stale"] is False
    assert {j["asset"] for j in prov["joined"]} >= {"dbt_run_results", "dbt_sources", "bi_health_looker"}


def test_incident_ranks_the_failed_model_and_the_missing_column(server) -> None:
    (ok, tile70), (ok2, tile72) = call_tools(
        server,
        [
            (
                "lineage_explain_incident",
                {"start_kind": "tile", "start": "Daily revenue", "system": "looker"},
            ),
            ("lineage_explain_incident", {"start_kind": "tile", "start": "72"}),
        ],
    )
    assert ok and ok2, (tile70, tile72)
    top = tile70["causes"][0]
    assert top["cause"] == "failed_model" and top["name"] == "stg_orders" and top["rank"] == 1
    assert top["next_tool"]["tool"] == "dbt_get_failed_models"
    assert {"stale_source", "skipped_model"} <= {c["cause"] for c in tile70["causes"]}
    broken = tile72["causes"][0]
    assert broken["cause"] == "tile_references_missing_column"
    assert broken["evidence"]["missing_columns"] == ["discount"]
    assert tile72["symptom"]["status"] == "error" and tile72["symptom"]["error_kind"] == "missing_column"


def test_a_healthy_chain_has_no_cause_and_a_moved_input_is_stale(tmp_settings: Settings) -> None:
    _publish_project(tmp_settings, failed=False, stale=False)
    _publish_lineage(tmp_settings)
    server = build_server(tmp_settings, only="lineage")
    ok, body = call_tool(server, "lineage_explain_incident", {"start_kind": "table", "start": "main.revenue"})
    assert ok and body["causes"] == [] and "no failing" in body["verdict"]
    # a new dbt lineage index after the graph was built: the answer says the graph is behind
    StoreWriter(tmp_settings.store_root).publish("dbt_lineage_index", build_lineage_index(_manifest()))
    ok, body = call_tool(server, "lineage_trace", {"start_kind": "dbt_node", "start": "orders", "depth": 1})
    assert (
        ok
        and body["provenance"]["stale"] is True
        and "dbt_lineage_index" in body["provenance"]["stale_reason"]
    )


def test_errors_are_structured(server, tmp_settings: Settings) -> None:
    ok, err = call_tool(server, "lineage_trace", {"start_kind": "dashboard", "start": "nope"})
    assert not ok and err["error"] == "node_not_found"
    ok, err = call_tool(server, "lineage_trace", {"start_kind": "table", "start": "orders"})
    assert not ok and err["error"] == "ambiguous_node" and "wh.main.orders" in err["detail"]
    ok, err = call_tool(server, "lineage_trace", {"start_kind": "sideways", "start": "x"})
    assert not ok
    empty = build_server(Settings(home=tmp_settings.home / "empty"), only="lineage")
    ok, err = call_tool(empty, "lineage_trace", {"start_kind": "dbt_node", "start": "orders"})
    assert not ok and err["error"] == "asset_not_materialized" and LINEAGE_ASSET in err["detail"]


def test_a_tile_health_observed_seconds_ago_is_the_symptom_now(server, tmp_settings: Settings) -> None:
    """bi_check_dashboard_health (another agent) saw tile 70 fail a moment ago: the join starts from that
    observation instead of the snapshot, which still says the tile is ok, and dates the symptom from it."""
    import time

    from ade_platform.store.observations import record_observation, tile_key

    writer = StoreWriter(tmp_settings.store_root)
    state = {"status": "error", "error": 'Binder Error: Referenced column "total" not found in FROM clause!'}
    record_observation(
        writer, "bi_tile_health", tile_key("looker", "7", "70"), state, source="bi_check_dashboard_health"
    )
    ok, body = call_tool(server, "lineage_explain_incident", {"start_kind": "tile", "start": "70"})
    assert ok, body
    symptom = body["symptom"]
    assert (
        symptom["status"] == "error"
        and symptom["observed"]["via"] == "observation by bi_check_dashboard_health"
    )
    assert symptom["columns"] == ["total"] and symptom["onset"]["last_healthy_at"] is not None
    # older than a few seconds it is not reused as the symptom now, but with no live BI configured it is still
    # the newest picture there is: newer than the snapshot, which says ok
    time.sleep(11)
    ok, later = call_tool(server, "lineage_explain_incident", {"start_kind": "tile", "start": "70"})
    assert ok and later["symptom"]["status"] == "error", later["symptom"]
    assert later["symptom"]["observed"] == {
        "source": "observation",
        "observed_at": symptom["observed"]["observed_at"],
        "by": "bi_check_dashboard_health",
    }
