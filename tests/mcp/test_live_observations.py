"""What one agent's live call saw, the next agent's cached call sees: observations in the store, through MCP.

On a copy of the materialized demo's store and warehouse (so the demo session stays as it was), with the BI
emulators: agent A calls a live tool, agent B (a new gateway: a new client, a new context) answers from the store
and prefers A's newer observation to the older snapshot, naming where it came from. Unchanged states are recorded
once, and the configured bounds hold. The Dagster sensor turns the observations into asset observations, once
each, and `ade status` says a newer live observation exists.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ade_platform.config import Settings
from ade_platform.lib.warehouse.file_lock import writing
from ade_platform.live import LiveRunner
from ade_platform.store import StoreReader
from ade_platform.store.observations import (
    OBSERVATIONS_DIR,
    dashboard_key,
    latest_observation,
    latest_observations,
    observation_history,
    table_key,
    tile_key,
)
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.helpers import call_tool

pytestmark = pytest.mark.integration


@pytest.fixture
def copied(demo_settings: Settings, tmp_path: Path) -> Settings:
    """The demo's settings on copies of its store and warehouse, keeping two changes per observed object."""
    store, warehouse = tmp_path / "store", tmp_path / "demo.duckdb"
    # Without what earlier tests' live calls observed on the shared demo store: this test starts from the snapshot.
    shutil.copytree(demo_settings.store_root, store, ignore=shutil.ignore_patterns(OBSERVATIONS_DIR))
    shutil.copy2(demo_settings.warehouses["demo"].path, warehouse)  # type: ignore[union-attr]
    return demo_settings.model_copy(
        update={
            "store": demo_settings.store.model_copy(update={"root": str(store)}),
            "warehouses": {
                **demo_settings.warehouses,
                "demo": demo_settings.warehouses["demo"].model_copy(update={"path": warehouse}),
            },
            "mcp": demo_settings.mcp.model_copy(update={"observations_per_key": 2}),
        }
    )


def agent(settings: Settings, dagster_home: Path) -> tuple[Any, BridgeContext]:
    """A new gateway (its own context), whose live calls are recorded in a Dagster instance of its own."""
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(dagster_home)
    return build_server(settings, ctx=ctx), ctx


def _rename(settings: Settings, old: str, new: str) -> None:
    path = settings.warehouses["demo"].path  # type: ignore[union-attr]
    with writing(path), duckdb.connect(str(path)) as con:  # as a migration outside ADE takes the file
        con.execute(f"alter table main.orders rename column {old} to {new}")


def _orders(answer: dict[str, Any]) -> list[str]:
    (orders,) = [t for t in answer["tables"] if t["table_name"] == "orders"]
    return [c["column_name"] for c in orders["columns"]]


def test_a_live_schema_read_reaches_the_next_agents_cached_answers(copied: Settings, tmp_path: Path) -> None:
    from dagster import SensorResult, SkipReason

    from ade_platform.defs.observations import observation_events

    reader, key = StoreReader(copied.store_root), table_key("demo", "main", "orders")
    ok, before = call_tool(agent(copied, tmp_path / "b0")[0], "warehouse_get_schema", {"schema_name": "main"})
    assert ok and "status" in _orders(before) and "observations" not in before["provenance"], before

    _rename(copied, "status", "order_status")
    server_a, ctx_a = agent(copied, tmp_path / "a")
    one_table = {"schema_name": "main", "table_name": "orders"}
    ok, live = call_tool(server_a, "warehouse_get_schema", one_table)
    assert ok and live["provenance"]["source"] == "live", live
    assert ctx_a.flush_observations()

    # Agent B: a new session, the whole schema from the snapshot, with A's newer live read in its place.
    ok, cached = call_tool(agent(copied, tmp_path / "b")[0], "warehouse_get_schema", {"schema_name": "main"})
    assert ok, cached
    assert "order_status" in _orders(cached) and "status" not in _orders(cached)
    prov = cached["provenance"]
    assert prov["source"] == "cache" and prov["observations"][0]["key"] == key, prov
    assert prov["observations"][0]["source"] == "warehouse_get_schema"
    # dbt's view of the relation (the catalog of the last docs generate) prefers it too.
    args = {"model_name": "orders", "source": "catalog"}
    ok, catalog = call_tool(agent(copied, tmp_path / "b")[0], "dbt_get_schema", args)
    assert ok and "order_status" in [c["column_name"] for c in catalog["columns"]], catalog
    assert catalog["columns_observed_at"] == prov["observations"][0]["observed_at"]
    assert catalog["provenance"]["observations"] == prov["observations"]

    # The same state seen again (by the drift tool too) is not recorded again.
    call_tool(server_a, "warehouse_get_schema", one_table)
    ok, drift = call_tool(server_a, "warehouse_detect_schema_drift", {"model_name": "orders"})
    assert ok and drift["drift_detected"] is True, drift
    assert ctx_a.flush_observations()
    assert len(observation_history(reader, "table_schema", key)) == 1

    # The Dagster sensor shows it on the schema asset, once.
    defined = {"warehouse_schema_demo"}
    tick = observation_events(copied, defined, None)
    assert isinstance(tick, SensorResult) and len(tick.asset_events) == 1, tick
    (event,) = tick.asset_events
    assert event.asset_key.to_user_string() == "warehouse_schema_demo" and event.metadata["key"].value == key
    assert isinstance(observation_events(copied, defined, tick.cursor), SkipReason)

    # Every change is recorded, and only the newest mcp.observations_per_key (2) of them kept.
    for old, new in (("order_status", "status"), ("status", "order_state"), ("order_state", "status")):
        _rename(copied, old, new)
        call_tool(server_a, "warehouse_get_schema", one_table)
        assert ctx_a.flush_observations()
    history = observation_history(reader, "table_schema", key)
    assert len(history) == 2
    assert ["status" in [c["name"] for c in h.state["columns"]] for h in history] == [False, True]
    later = observation_events(copied, defined, tick.cursor)
    # Every change since the cursor that is still retained (the oldest of the three was pruned).
    assert isinstance(later, SensorResult) and len(later.asset_events) == 2


def test_a_live_health_check_reaches_the_next_agents_cached_tiles(copied: Settings, tmp_path: Path) -> None:
    server_a, ctx_a = agent(copied, tmp_path / "a")
    ok, health = call_tool(server_a, "bi_check_dashboard_health", {"tool": "looker", "dashboard_id": "1"})
    assert ok and health["status"] == "error", health
    assert ctx_a.flush_observations()
    reader = StoreReader(copied.store_root)
    tile = latest_observation(reader, "bi_tile_health", tile_key("looker", "1", "103"))
    assert (
        tile is not None and tile.state["status"] == "error" and "fulfillment_status" in tile.state["error"]
    )
    assert tile.asset == "bi_health_looker" and tile.source == "bi_check_dashboard_health"

    ok, elements = call_tool(
        agent(copied, tmp_path / "b")[0], "bi_get_dashboard_elements", {"tool": "looker", "dashboard_id": "1"}
    )
    assert ok, elements
    seen = elements["provenance"]["observations"]
    assert seen == [tile.stamp() | {"key": dashboard_key("looker", "1")}], seen
    assert elements["errors_checked_at"] == seen[0]["observed_at"]
    broken = {e["element_id"]: e for e in elements["elements"]}["103"]
    assert broken["has_error"] is True and "fulfillment_status" in broken["error_detail"]

    # Nothing changed on a second check: nothing new recorded.
    call_tool(server_a, "bi_check_dashboard_health", {"tool": "looker", "dashboard_id": "1"})
    assert ctx_a.flush_observations()
    assert len(observation_history(reader, "bi_dashboard_health", dashboard_key("looker", "1"))) == 1


def test_observed_objects_are_bounded_in_total(copied: Settings, tmp_path: Path) -> None:
    settings = copied.model_copy(update={"mcp": copied.mcp.model_copy(update={"observation_keys": 3})})
    server, ctx = agent(settings, tmp_path / "a")
    tables = ["orders", "customers", "stg_orders", "stg_customers", "stg_payments"]
    for table in tables:
        ok, answer = call_tool(server, "warehouse_get_schema", {"schema_name": "main", "table_name": table})
        assert ok, answer
        assert ctx.flush_observations()
    kept = latest_observations(StoreReader(settings.store_root), "table_schema")
    assert 0 < len(kept) <= 3
    assert table_key("demo", "main", "stg_payments") in {o.key for o in kept}  # the newest stays


def test_ade_status_says_a_newer_live_observation_exists(copied: Settings, tmp_path: Path) -> None:
    from ade_platform.ops import asset_status, render_status

    server, ctx = agent(copied, tmp_path / "a")
    ok, answer = call_tool(server, "warehouse_get_schema", {"schema_name": "main", "table_name": "customers"})
    assert ok, answer
    assert ctx.flush_observations()
    rows = {r["asset"]: r for r in asset_status(copied)}
    seen = rows["warehouse_schema_demo"]["newer_observation"]
    assert seen is not None and seen["key"] == table_key("demo", "main", "customers"), seen
    assert rows["dbt_manifest"]["newer_observation"] is None
    assert "newer live observation: demo:main.customers by warehouse_get_schema" in render_status(
        list(rows.values())
    )
