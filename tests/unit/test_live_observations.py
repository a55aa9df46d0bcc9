"""Live answers as observations (only facts that stay true until the system changes), and schema answers that
prefer a newer observation to their snapshot."""

from __future__ import annotations

import time
from pathlib import Path

from ade_platform.lib.live_observations import (
    from_answer,
    newer_freshness,
    schema_with_observations,
    tile_errors,
)
from ade_platform.store import StoreReader, StoreWriter
from ade_platform.store.observations import Observation, record_observation, table_key


def test_run_observations_key_the_run_and_the_job_only_for_its_latest_run() -> None:
    run = {"run_id": 9, "job_id": 7301, "status": "Error", "status_message": "boom", "started_at": "s",
           "finished_at": "f", "duration_seconds": 12.5, "waited_seconds": 3.0, "provenance": {}}  # fmt: skip
    assert [o.key for o in from_answer("dbtcloud_poll_run", run, {})] == ["dbt_cloud:run/9"]
    found = from_answer("dbtcloud_get_last_run", run, {"latest": True})
    assert [o.key for o in found] == ["dbt_cloud:run/9", "dbt_cloud:job/7301"]
    assert found[0].state == {"run_id": 9, "job_id": 7301, "status": "Error", "status_message": "boom",
                              "started_at": "s", "finished_at": "f"}  # fmt: skip
    assert found[0].asset == "dbt_cloud_runs"
    airflow = {"dag_id": "nightly", "run_id": "r1", "state": "failed", "status": "failed", "start_date": "s",
               "end_date": "e", "duration_seconds": 3.0, "backend": "airflow"}  # fmt: skip
    found = from_answer("orchestrator_get_last_run", airflow, {"backend": "airflow", "latest": False})
    assert [(o.key, o.asset) for o in found] == [("airflow:dag/nightly/run/r1", "orchestrator_runs_airflow")]


def test_health_and_freshness_leave_out_what_changes_with_the_clock() -> None:
    health = {
        "dashboard_id": "1", "status": "error", "error_detail": "x", "elements": [
            {"element_id": "3", "status": "error", "error": "column y not found", "row_count": None, "elapsed_ms": 9},
            {"element_id": "4", "status": "ok", "error": None, "row_count": 12, "elapsed_ms": 3},
        ],
    }  # fmt: skip
    dashboard, *tiles = from_answer("bi_check_dashboard_health", health, {"tool": "looker"})
    assert dashboard.key == "looker:dashboard/1" and dashboard.asset == "bi_health_looker"
    assert [t.key for t in tiles] == ["looker:dashboard/1/tile/3", "looker:dashboard/1/tile/4"]
    assert tiles[1].state == {"status": "ok", "error": None}  # no row count, no elapsed time
    obs = Observation(dashboard.kind, dashboard.key, dashboard.state, 1.0, "t")
    assert tile_errors(obs) == {"3": "column y not found"}
    fresh = {"table_name": "raw.orders", "timestamp_column": "loaded_at", "max_timestamp": "2026-01-01T00:00:00Z",
             "staleness_hours": 73.2, "checked_at": "now", "is_fresh": False}  # fmt: skip
    (found,) = from_answer("warehouse_check_freshness", fresh, {"warehouse": "demo",
                                                                "table": {"schema": "RAW", "name": "Orders"}})  # fmt: skip
    assert (found.key, found.state) == (
        "demo:raw.orders",
        {"column": "loaded_at", "max_timestamp": "2026-01-01T00:00:00Z"},
    )
    assert from_answer("warehouse_execute", {}, {}) == []


def test_a_schema_answer_takes_newer_live_tables_in_place_of_the_snapshots(tmp_path: Path) -> None:
    writer, reader = StoreWriter(tmp_path), StoreReader(tmp_path)
    col = {"name": "id", "type": "INTEGER", "nullable": False, "position": 1}
    snapshot = writer.publish("warehouse_schema_demo", {"warehouse": "demo", "tables": [
        {"schema": "main", "name": "orders", "table_type": "BASE TABLE", "columns": [col]},
        {"schema": "main", "name": "old", "table_type": "BASE TABLE", "columns": [col]},
        {"schema": "main", "name": "kept", "table_type": "VIEW", "columns": [col]},
    ]})  # fmt: skip
    snap = reader.latest("warehouse_schema_demo")
    assert schema_with_observations(reader, "demo", snap) == (snap.data, [])
    renamed = {
        "schema": "main",
        "name": "orders",
        "table_type": "BASE TABLE",
        "columns": [{**col, "name": "oid"}],
    }
    table = from_answer("warehouse_get_schema", renamed, {"warehouse": "demo", "parts": ["main", "orders"]})[
        0
    ]
    gone = from_answer("warehouse_get_schema", None, {"warehouse": "demo", "parts": ["main", "old"]})[0]
    for o in (table, gone):
        record_observation(writer, o.kind, o.key, o.state, source="warehouse_get_schema", asset=o.asset)
    # An observation older than the snapshot does not count; one of another warehouse neither.
    record_observation(writer, "table_schema", table_key("demo", "main", "kept"), {"exists": False}, source="t",
                       observed_at=snapshot.materialized_epoch - 10)  # fmt: skip
    record_observation(
        writer, "table_schema", table_key("other", "main", "kept"), {"exists": False}, source="t"
    )
    data, seen = schema_with_observations(reader, "demo", snap)
    assert {o.key for o in seen} == {"demo:main.orders", "demo:main.old"}
    assert [(t["name"], [c["name"] for c in t["columns"]]) for t in data["tables"]] == [
        ("orders", ["oid"]), ("kept", ["id"])
    ]  # fmt: skip
    assert snap.data["tables"][0]["columns"][0]["name"] == "id"  # the snapshot itself is unchanged


def test_a_newer_live_freshness_check_of_the_same_column_wins(tmp_path: Path) -> None:
    writer, reader = StoreWriter(tmp_path), StoreReader(tmp_path)
    writer.publish("warehouse_freshness_demo", {"tables": []})
    snap = reader.latest("warehouse_freshness_demo")
    table = {"schema": "raw", "name": "orders"}
    assert newer_freshness(reader, "demo", table, "loaded_at", snap) is None
    state = {"column": "loaded_at", "max_timestamp": "2026-01-01T00:00:00Z"}
    record_observation(
        writer, "source_freshness", "demo:raw.orders", state, source="t", observed_at=time.time() + 1
    )
    assert newer_freshness(reader, "demo", table, "LOADED_AT", snap).state == state  # type: ignore[union-attr]
    assert newer_freshness(reader, "demo", table, "updated_at", snap) is None


def test_recording_never_fails_or_changes_the_answer(tmp_settings) -> None:  # type: ignore[no-untyped-def]
    from mcp_bridge.context import BridgeContext

    ctx = BridgeContext.from_settings(tmp_settings)
    odd = {"dashboard_id": "1"}  # no status, no elements: not a health answer after all
    assert ctx.observed("bi_check_dashboard_health", odd, tool="looker") is odd
    fresh = {"timestamp_column": "loaded_at", "max_timestamp": "2026-01-01T00:00:00Z"}
    table = {"schema": "raw", "name": "orders"}
    assert ctx.observed("warehouse_check_freshness", fresh, warehouse="demo", table=table) is fresh
    assert ctx.flush_observations()
    seen = ctx.newer_observation("source_freshness", "demo:raw.orders", None)
    assert seen is not None and seen.source == "warehouse_check_freshness"
    assert ctx.newer_observation("source_freshness", "demo:raw.orders", seen.observed_at) is None
