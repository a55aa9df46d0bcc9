"""The BI Dagster definitions on the materialized demo: inventory and health snapshots (built after the dbt
models in the same materialization), the checks on broken and empty tiles, and the dashboard-error sensor."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from ade_platform.config import Settings
from ade_platform.definitions import build_definitions
from ade_platform.defs.bi import BROKEN_CHECK, EMPTY_CHECK
from ade_platform.store import StoreReader

pytestmark = pytest.mark.integration


def test_inventory_names_the_tables_each_tile_reads(demo_settings: Settings) -> None:
    reader = StoreReader(demo_settings.store_root)
    for tool in ("looker", "metabase"):
        inventory = reader.latest(f"bi_inventory_{tool}").data
        assert inventory["tool"] == tool and len(inventory["dashboards"]) == 2
        elements = [e for d in inventory["dashboards"] for e in d["elements"]]
        tables = {t["relation"] for e in elements for t in e["tables"]}
        assert {"demo.main.orders", "demo.main.customers", "demo.main.fct_payments_daily"} <= tables
        for e in elements:  # the contract in docs/STORE_ASSETS.md
            assert {"id", "title", "type", "look_id", "question_id", "model", "explore", "sql", "dimensions",
                    "measures", "columns", "tables"} <= set(e)  # fmt: skip
    looker = reader.latest("bi_inventory_looker").data
    tile = next(e for d in looker["dashboards"] for e in d["elements"] if e["id"] == "103")
    assert tile["columns"] == ["fulfillment_status"]


def test_health_ran_after_dbt_and_found_the_planted_tiles(demo_settings: Settings) -> None:
    reader = StoreReader(demo_settings.store_root)
    # each tool's third dashboard: a tile empty under the dashboard's filter (run as the dashboard renders it)
    for tool, broken, empty, filtered in (("looker", "103", "104", "301"), ("metabase", "12", "13", "31")):
        health = reader.latest(f"bi_health_{tool}").data
        statuses = {d["id"]: d["status"] for d in health["dashboards"]}
        assert statuses == {"1": "error", "2": "ok", "3": "ok"}, (
            health
        )  # the warehouse existed: dbt ran first
        tiles = {e["id"]: e for d in health["dashboards"] for e in d["elements"]}
        assert tiles[broken]["status"] == "error" and tiles[empty]["status"] == "empty"
        assert tiles[filtered]["status"] == "empty"
        assert all(t["status"] == "ok" for i, t in tiles.items() if i not in (broken, empty, filtered))
    defs = build_definitions(demo_settings)
    graph = defs.resolve_asset_graph()
    health_key = dg.AssetKey("bi_health_looker")
    assert dg.AssetKey("bi_inventory_looker") in graph.get(health_key).parent_keys
    assert dg.AssetKey("orders") in graph.get(dg.AssetKey("bi_inventory_looker")).parent_keys
    instance = dg.DagsterInstance.from_config(str(demo_settings.dagster_home))
    for check in (BROKEN_CHECK, EMPTY_CHECK):
        record = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(health_key, check)]
        )[dg.AssetCheckKey(health_key, check)]
        assert record.event.dagster_event.event_specific_data.passed is False


def test_sensor_notices_a_dashboard_turning_to_error(demo_settings: Settings) -> None:
    sensor = build_definitions(demo_settings).resolve_sensor_def("bi_dashboard_error_sensor")
    was_fine = {"looker:1": "ok", "looker:2": "ok", "metabase:1": "ok", "metabase:2": "ok"}
    with dg.build_sensor_context(cursor=json.dumps(was_fine)) as context:
        result = sensor(context)
        assert len(result.run_requests) == 1, result
        assert result.run_requests[0].tags["ade/dashboards"] == "looker:1,metabase:1"
        cursor = json.loads(result.cursor)
    assert cursor["looker:1"] == "error" and cursor["looker:2"] == "ok"
    with dg.build_sensor_context(cursor=json.dumps(cursor)) as context:
        again = sensor(context)
    assert not again.run_requests and again.skip_reason  # already in error: no second alert
