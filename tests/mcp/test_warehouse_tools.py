"""The warehouse toolset through the MCP protocol, on a copy of the materialized demo (DuckDB)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ade_platform.config import Settings
from ade_platform.live import TAG_ARGUMENTS, TAG_TOOL, LiveRunner
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import assert_refused, call_tool, call_tools, read_only_open_world_tools
from tests.mcp.shape_check import assert_declared

pytestmark = pytest.mark.integration
TOOLS = {
    "warehouse_execute", "warehouse_get_schema", "warehouse_detect_schema_drift", "warehouse_check_freshness",
    "warehouse_get_query_history", "warehouse_explain_query", "warehouse_detect_duplicates",
}  # fmt: skip


def copy_demo(demo: Settings, home: Path) -> Settings:
    """The demo's store and DuckDB file under a new ADE_HOME: tests may change them freely."""
    shutil.copytree(Path(demo.store_root.url), home / "store")
    shutil.copytree(demo.home / "warehouse", home / "warehouse")
    return settings_for(home)


def server_for(settings: Settings) -> tuple[Any, BridgeContext]:
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(settings.home / "dagster")  # an instance of its own, not the demo's
    return build_server(settings, only="warehouse", ctx=ctx), ctx


@pytest.fixture(scope="module")
def wh(
    demo_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Settings, Any, BridgeContext]:
    settings = copy_demo(demo_settings, tmp_path_factory.mktemp("wh") / "ade")
    server, ctx = server_for(settings)
    return settings, server, ctx


def test_seven_tools_all_read_only_open_world(wh: tuple[Settings, Any, BridgeContext]) -> None:
    read_only_open_world_tools(wh[1], TOOLS)


def test_execute_bounds_rows_and_is_an_audited_run(wh: tuple[Settings, Any, BridgeContext]) -> None:
    _, server, ctx = wh
    ok, body = call_tool(
        server,
        "warehouse_execute",
        {
            "sql": "select status, count(*) as n from main.orders where status <> 'lost' group by 1 order by 2 desc",
            "limit": 2,
        },
    )
    assert ok, body
    assert (
        body["row_count"] == 2 and body["limit_applied"] and body["truncated"] and body["warehouse"] == "demo"
    )
    assert (
        set(body["rows"][0]) == {"status", "n"}
        and body["bytes_processed"] is None
        and body["elapsed_ms"] >= 0
    )
    assert body["provenance"]["source"] == "live"
    assert_declared(server, [("warehouse_execute", body)])
    ctx.live().flush()  # read-only live tools record their audit run in the background
    run = ctx.live().instance().get_run_by_id(body["provenance"]["run_id"])
    assert run.tags[TAG_TOOL] == "warehouse_execute" and run.job_name == "live__warehouse_execute"
    arguments = json.loads(run.tags[TAG_ARGUMENTS])
    assert arguments["warehouse"] == "demo" and "lost" not in arguments["sql"]  # literals redacted
    ok, small = call_tool(server, "warehouse_execute", {"sql": "select 42 as answer limit 1"})
    assert (
        ok
        and small["rows"] == [{"answer": 42}]
        and small["limit_applied"] is False
        and not small["truncated"]
    )
    # No silent cap: a limit above limits.max_rows says what was asked and what was applied.
    ok, capped = call_tool(server, "warehouse_execute", {"sql": "select 1 as one", "limit": 50_000})
    assert ok and (capped["limit_requested"], capped["limit"], capped["limit_capped"]) == (50_000, 1000, True)
    assert (small["limit_requested"], small["limit_capped"]) == (1000, False)


def _state(path: Path) -> tuple:
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = con.execute(
            "select table_schema, table_name from information_schema.tables order by 1, 2"
        ).fetchall()
        counts = con.execute("select count(*), sum(amount) from main.orders").fetchone()
        return tables, counts
    finally:
        con.close()


@pytest.mark.parametrize(
    "sql",
    [
        "delete from main.orders",
        "drop table main.orders",
        "update main.orders set amount = 0",
        "insert into main.orders select * from main.orders",
        "create table main.copy as select * from main.orders",
        "select 1; delete from main.orders",
        "with gone as (delete from main.orders returning *) select count(*) from gone",
        "select * into main.copy from main.orders",
        "copy main.orders to 'orders.csv'",
        "attach 'other.duckdb' as other",
        "truncate main.orders",
    ],
)
def test_refused_sql_changes_nothing_and_starts_no_run(
    wh: tuple[Settings, Any, BridgeContext], sql: str
) -> None:
    settings, server, ctx = wh
    path = settings.warehouses["demo"].path
    before = _state(path)
    from dagster import RunsFilter

    ctx.live().flush()  # earlier calls' background audit runs must not land inside this count
    runs_before = len(ctx.live().instance().get_runs(RunsFilter(tags={TAG_TOOL: "warehouse_execute"})))
    results = call_tools(
        server, [("warehouse_execute", {"sql": sql}), ("warehouse_explain_query", {"sql": sql})]
    )
    for ok, body in results:
        assert not ok and body["error"] == "dml_not_permitted", body
    assert _state(path) == before
    ctx.live().flush()
    assert (
        len(ctx.live().instance().get_runs(RunsFilter(tags={TAG_TOOL: "warehouse_execute"}))) == runs_before
    )


def test_schema_drift_freshness_from_snapshots(wh: tuple[Settings, Any, BridgeContext]) -> None:
    results = call_tools(
        wh[1],
        [
            ("warehouse_get_schema", {"schema_name": "main", "table_name": "orders"}),
            ("warehouse_get_schema", {"schema_name": "demo.raw"}),
            ("warehouse_detect_schema_drift", {"model_name": "stg_orders"}),
            ("warehouse_check_freshness", {"table_name": "raw.orders", "timestamp_column": "_loaded_at"}),
            (
                "warehouse_check_freshness",
                {
                    "table_name": "demo.raw.customers",
                    "timestamp_column": "_LOADED_AT",
                    "freshness_threshold_hours": 12,
                },
            ),
        ],
    )
    assert all(ok for ok, _ in results), results
    table, raw, drift, orders_fresh, customers_fresh = (body for _, body in results)
    assert table["table_name"] == "orders" and table["column_count"] == len(table["columns"]) >= 10
    assert table["columns"][0]["column_name"] == "order_id" and table["columns"][0]["is_nullable"] in (
        "YES",
        "NO",
    )
    assert table["provenance"]["source"] == "live"  # one table: read live
    assert raw["provenance"] == {**raw["provenance"], "asset": "warehouse_schema_demo", "source": "cache"}
    assert {t["table_name"] for t in raw["tables"]} == {"customers", "orders", "payments"}
    assert (
        drift["drift_detected"] is False
        and drift["unchanged_count"] == 6
        and drift["provenance"]["source"] == "live"
        and drift["provenance"]["history"]["asset"] == "warehouse_schema_demo"
    )
    # no freshness snapshot is configured in the demo: these are live checks
    assert orders_fresh["is_fresh"] is False and 47 < orders_fresh["staleness_hours"] < 60
    assert orders_fresh["provenance"]["source"] == "live" and orders_fresh["row_count_sampled"] > 0
    assert customers_fresh["is_fresh"] is True and customers_fresh["timestamp_column"] == "_loaded_at"
    names = (
        ["warehouse_get_schema"] * 2 + ["warehouse_detect_schema_drift"] + ["warehouse_check_freshness"] * 2
    )
    assert_declared(wh[1], list(zip(names, (body for _, body in results), strict=True)))


def test_explain_duplicates_and_history(wh: tuple[Settings, Any, BridgeContext]) -> None:
    results = call_tools(
        wh[1],
        [
            ("warehouse_explain_query", {"sql": "select * from main.orders where amount > 100"}),
            ("warehouse_detect_duplicates", {"table_name": "main.orders", "key_columns": ["customer_id"]}),
            ("warehouse_detect_duplicates", {"table_name": "stg_orders", "key_columns": ["ORDER_ID"]}),
            ("warehouse_get_query_history", {"table_pattern": "orders"}),
        ],
    )
    (ok1, plan), (ok2, dup), (ok3, unique), (ok4, history) = results
    assert ok1 and "orders" in plan["plan_text"].lower() and plan["estimated_cost_credits"] is None
    assert ok2 and dup["severity"] == "high" and len(dup["sample_duplicates"]) == 5
    first = dup["sample_duplicates"][0]
    assert first["occurrence_count"] >= 2 and first["sample_row"]["customer_id"] == first["customer_id"]
    assert dup["duplicate_row_count"] >= dup["duplicate_key_count"] * 2
    assert (
        ok3
        and unique["duplicate_key_count"] == 0
        and unique["severity"] == "none"
        and unique["key_columns"] == ["order_id"]
    )
    assert not ok4 and history["error"] == "not_implemented"
    assert_declared(
        wh[1],
        [
            ("warehouse_explain_query", plan),
            ("warehouse_detect_duplicates", dup),
            ("warehouse_detect_duplicates", unique),
        ],
        free=(".sample_duplicates[].",),  # a sample carries one field per key column
    )


BAD = [
    ("warehouse_execute", {}, "invalid_argument"),
    ("warehouse_execute", {"sql": "select 1", "limit": 0}, "invalid_argument"),
    ("warehouse_execute", {"sql": "select 1", "limit": "many"}, "invalid_argument"),
    ("warehouse_execute", {"sql": ""}, "invalid_argument"),
    ("warehouse_execute", {"sql": "selec 1 frm x"}, "invalid_argument"),
    ("warehouse_execute", {"sql": "select 1", "warehouse": "nope"}, "invalid_argument"),
    ("warehouse_execute", {"sql": "select * from main.no_such_table"}, "query_failed"),
    ("warehouse_execute", {"sql": "select 1", "extra": True}, "invalid_argument"),
    ("warehouse_get_schema", {"schema_name": "nope"}, "schema_not_found"),
    ("warehouse_get_schema", {"schema_name": "main", "table_name": "nope"}, "table_not_found"),
    ("warehouse_get_schema", {"schema_name": "a.b.c"}, "invalid_argument"),
    ("warehouse_get_schema", {"schema_name": '"unbalanced'}, "invalid_argument"),
    ("warehouse_detect_schema_drift", {"model_name": "stg_ordrs"}, "model_not_found"),
    ("warehouse_detect_schema_drift", {"model_name": "orders", "manifest_path": "/etc/passwd"}, "path_not_allowed"),
    ("warehouse_detect_schema_drift", {"model_name": "orders", "manifest_path": "dbt/missing/manifest.json"}, "artifact_not_found"),
    ("warehouse_check_freshness", {"table_name": "raw.orders", "timestamp_column": "nope"}, "column_not_found"),
    ("warehouse_check_freshness", {"table_name": "raw.orders", "timestamp_column": "status"}, "invalid_argument"),
    ("warehouse_check_freshness", {"table_name": "raw.nope", "timestamp_column": "x"}, "table_not_found"),
    ("warehouse_check_freshness", {"table_name": "orders", "timestamp_column": "_loaded_at"}, "invalid_argument"),
    ("warehouse_check_freshness", {"table_name": "a.b.c.d", "timestamp_column": "x"}, "invalid_argument"),
    ("warehouse_check_freshness", {"table_name": "raw.orders", "timestamp_column": "_loaded_at", "freshness_threshold_hours": -1}, "invalid_argument"),
    ("warehouse_get_query_history", {"table_pattern": "orders", "lookback_days": 31}, "invalid_argument"),
    ("warehouse_get_query_history", {"table_pattern": ""}, "invalid_argument"),
    ("warehouse_detect_duplicates", {"table_name": "main.orders", "key_columns": []}, "invalid_argument"),
    ("warehouse_detect_duplicates", {"table_name": "main.orders", "key_columns": ["nope"]}, "column_not_found"),
    ("warehouse_detect_duplicates", {"table_name": "main.orders", "key_columns": ["order_id", "ORDER_ID"]}, "invalid_argument"),
    ("warehouse_detect_duplicates", {"table_name": "main.nope", "key_columns": ["id"]}, "table_not_found"),
    ("warehouse_detect_duplicates", {"table_name": "main.orders", "key_columns": "order_id"}, "invalid_argument"),
    ("warehouse_explain_query", {"sql": "select 1; select 2"}, "dml_not_permitted"),
]  # fmt: skip


def test_bad_input_of_every_kind_is_a_structured_error(wh: tuple[Settings, Any, BridgeContext]) -> None:
    for body in assert_refused(wh[1], BAD):
        assert body["detail"] and body["hint"], body
        assert "Traceback" not in body["detail"] and str(wh[0].home) not in body["detail"]


def test_unmaterialized_snapshot_names_the_asset(
    wh: tuple[Settings, Any, BridgeContext], tmp_path: Path
) -> None:
    from ade_platform.config import DuckDBWarehouse

    settings = wh[0]
    other = settings.model_copy(
        update={
            "warehouses": {
                **settings.warehouses,
                "scratch": DuckDBWarehouse(type="duckdb", path=tmp_path / "s.duckdb"),
            }
        }
    )
    server, _ = server_for(other)
    ok, body = call_tool(server, "warehouse_get_schema", {"schema_name": "main", "warehouse": "scratch"})
    assert not ok and body["error"] == "asset_not_materialized" and "warehouse_schema_scratch" in body["hint"]
    ok, body = call_tool(server, "warehouse_execute", {"sql": "select 1", "warehouse": "scratch"})
    assert not ok and body["error"] == "connection_failed"
    ok, body = call_tool(server, "warehouse_execute", {"sql": "select 1", "warehouse": "duckdb"})
    assert not ok and body["error"] == "invalid_argument"  # two DuckDB warehouses: the type is ambiguous
