"""The incident moment, on a project other than the demo (generated here): the first tool call after a
failed dbt build, a dbt run outside ADE, or a column renamed in the warehouse reports it, and says where
its answer came from.

One small dbt project on DuckDB is built once for the module (`ade materialize`, as a user would); the
tests then break it in the order an incident unfolds. Rebuilds select the dbt models only (one dbt invocation):
the run results, manifest and lineage index must come from the build step itself.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.config import Settings
from mcp_bridge.context import flush_all_observations
from mcp_bridge.server import build_server
from tests.helpers import call_tool
from tests.mcp.shop_project import materialize, materialized_shop, run_dbt

# Several real `ade materialize` runs and a dbt run (about a minute on an idle machine, far more on a loaded one):
# in `make test-slow`, with a generous time limit.
pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]

SCHEMA_YML = """
version: 2
models:
  - name: orders
    columns:
      - name: order_id
        data_type: integer
        data_tests: [not_null, unique]
      - name: status
        data_type: varchar
      - name: amount
        data_type: decimal(4,1)
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    root = tmp_path_factory.mktemp("incident")
    extra = {"models/schema.yml": SCHEMA_YML}
    with materialized_shop(root, "incident_shop", extra, ("dbt-artifacts", "warehouse")) as (_, settings):
        yield settings


def _call(settings: Settings, tool: str, args: dict | None = None) -> tuple[bool, dict]:
    # A fresh gateway per question, like a new MCP session (the store is what carries state).
    return call_tool(build_server(settings), tool, args or {})


def _warehouse(settings: Settings) -> Path:
    return settings.warehouses["shop"].path  # type: ignore[union-attr]


def test_a_failed_build_is_reported_on_the_first_call(shop: Settings) -> None:
    ok, before = _call(shop, "dbt_get_failed_models")
    assert ok and before["failed"] == [], before
    project = shop.dbt.project_dir  # type: ignore[union-attr]
    orders = project / "models" / "orders.sql"
    good = orders.read_text()
    # The incident: a model references a column that does not exist, and a new model depends on it.
    orders.write_text("select order_id, status, amount, no_such_column from {{ ref('stg_orders') }}\n")
    (project / "models" / "order_flags.sql").write_text(
        "select order_id, amount > 15 as big from {{ ref('orders') }}\n"
    )
    try:
        code, log = materialize(shop)
        assert code == 1, log[-3000:]  # the Dagster run still fails

        ok, failed = _call(shop, "dbt_get_failed_models")
        assert ok, failed
        assert [f["name"] for f in failed["failed"]] == ["orders"], failed
        skipped = {s["name"] for s in failed["skipped"]}
        assert {"order_totals", "order_flags"} <= skipped, failed
        assert failed["provenance"]["source"] == "cache" and failed["provenance"]["stale"] is False

        # The graph of the build that just ran (a model it added included), not the last good one.
        ok, blast = _call(shop, "dbt_get_blast_radius", {"node_id": "orders"})
        assert ok, blast
        assert "order_flags" in {a["name"] for a in blast["affected"]}, blast
    finally:
        orders.write_text(good)
        (project / "models" / "order_flags.sql").unlink()
    code, log = materialize(shop)
    assert code == 0, log[-3000:]
    ok, after = _call(shop, "dbt_get_failed_models")
    assert ok and after["failed"] == [], after


def test_a_dbt_run_outside_ade_is_published_by_the_first_answer_without_a_daemon(shop: Settings) -> None:
    from dagster import SkipReason

    from ade_platform.defs.dbt import publish_external_artifacts
    from ade_platform.lib.dbt.refresh import BY_GATEWAY
    from ade_platform.lib.dbt.staleness import watched_target

    project = shop.dbt.project_dir  # type: ignore[union-attr]
    target = watched_target(None, project)
    assert target == project / "target"
    ok, before = _call(shop, "dbt_get_failed_models")
    assert ok and before["provenance"]["stale"] is False, before
    # Someone runs dbt in a terminal (its default target folder), selecting one model that fails.
    orders = project / "models" / "orders.sql"
    good = orders.read_text()
    orders.write_text("select order_id, nope from {{ ref('stg_orders') }}\n")
    try:
        proc = run_dbt(project, _warehouse(shop), "run", "--select", "orders")
        assert proc.returncode == 1, proc.stdout[-2000:]
    finally:
        orders.write_text(good)
    assert (target / "run_results.json").exists()

    # No Dagster daemon runs here: the gateway publishes what dbt wrote before it answers.
    ok, fresh = _call(shop, "dbt_get_failed_models")
    assert ok, fresh
    assert fresh["provenance"]["stale"] is False, fresh["provenance"]
    assert fresh["provenance"]["published_by"] == BY_GATEWAY
    assert [f["name"] for f in fresh["failed"]] == ["orders"], fresh
    assert fresh["invocation"]["this_run"] is True and fresh["invocation"]["status"] == "error", fresh
    ok, graph = _call(shop, "dbt_get_lineage", {"node_id": "orders", "direction": "upstream"})
    assert ok and graph["provenance"]["stale"] is False, graph["provenance"]
    # The sensor's tick, when a daemon runs, finds it published already: nothing twice.
    assert isinstance(publish_external_artifacts(shop, target), SkipReason)
    shutil.rmtree(target)


def test_a_build_under_way_flags_the_previous_answers(shop: Settings) -> None:
    from ade_platform.lib.dbt.publish import mark_invocation
    from ade_platform.store import StoreWriter

    writer = StoreWriter(shop.store_root)
    mark_invocation(writer, state="running", run_id="abcdef12-run", started_at="2999-01-01T00:00:00+00:00")
    try:
        ok, answer = _call(shop, "dbt_get_model_tests", {"model_name": "orders"})
        assert ok and answer["provenance"]["stale"] is True, answer["provenance"]
        assert "abcdef12" in answer["provenance"]["stale_reason"]
    finally:
        mark_invocation(
            writer, state="published", run_id="abcdef12-run", started_at="2999-01-01T00:00:00+00:00"
        )
    ok, answer = _call(shop, "dbt_get_model_tests", {"model_name": "orders"})
    assert ok and answer["provenance"]["stale"] is False


def test_a_renamed_column_is_seen_live_and_dated_from_the_snapshots(shop: Settings) -> None:
    import duckdb

    from ade_platform.lib.warehouse.file_lock import writing

    ok, before = _call(shop, "warehouse_detect_schema_drift", {"model_name": "orders"})
    assert ok and before["drift_detected"] is False, before
    # A migration from outside ADE, run the documented way (`ade write-lock`): the gateway lets go of the file.
    with writing(_warehouse(shop)), duckdb.connect(str(_warehouse(shop))) as con:
        con.execute("alter table main.orders rename column status to order_status")
    try:
        ok, drift = _call(shop, "warehouse_detect_schema_drift", {"model_name": "orders"})
        assert ok, drift
        assert drift["drift_detected"] is True
        assert drift["likely_renames"] == [{"from": "status", "to": "order_status"}], drift
        assert drift["provenance"]["source"] == "live" and drift["provenance"]["stale"] is False
        # Not in any snapshot yet: first seen by this live observation.
        assert drift["added_in_warehouse"][0]["since"]["first_seen_version"] == "live"
        assert drift["provenance"]["history"]["asset"] == "warehouse_schema_shop"

        ok, schema = _call(shop, "warehouse_get_schema", {"schema_name": "main", "table_name": "orders"})
        assert ok and schema["provenance"]["source"] == "live", schema
        assert [c["column_name"] for c in schema["columns"]] == ["order_id", "order_status", "amount"]

        # Unreachable warehouse: the snapshot's answer, flagged stale with the error code, with the live reads
        # made since (recorded in the background: waited for here) in the snapshot's place.
        assert flush_all_observations()
        path = _warehouse(shop)
        moved = path.with_name("away.duckdb")
        path.rename(moved)
        try:
            ok, cached = _call(shop, "warehouse_detect_schema_drift", {"model_name": "orders"})
            ok2, cached_schema = _call(
                shop, "warehouse_get_schema", {"schema_name": "main", "table_name": "orders"}
            )
        finally:
            moved.rename(path)
        assert ok and ok2, (cached, cached_schema)
        for answer in (cached, cached_schema):
            prov = answer["provenance"]
            assert prov["source"] == "cache" and prov["stale"] is True, prov
            assert prov["live_error"] == "connection_failed" and "connection_failed" in prov["stale_reason"]
        # Not what the snapshot knew: what the live reads above saw, newer than it, and named as such.
        assert cached["drift_detected"] is True and cached["likely_renames"], cached
        assert cached["added_in_warehouse"][0]["since"]["first_seen_version"] == "live"
        assert "order_status" in [c["column_name"] for c in cached_schema["columns"]]
        for answer in (cached, cached_schema):
            (seen,) = answer["provenance"]["observations"]
            assert seen["key"] == "shop:main.orders" and seen["source"] == "warehouse_detect_schema_drift", (
                seen
            )
    finally:
        with writing(_warehouse(shop)), duckdb.connect(str(_warehouse(shop))) as con:
            con.execute("alter table main.orders rename column order_status to status")
    json.dumps(drift)  # answers are plain JSON
