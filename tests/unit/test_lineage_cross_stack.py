"""Cross-stack lineage on fixtures: every edge kind, selector methods, tracing, health and incident ranking."""

from __future__ import annotations

from typing import Any

import pytest

from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.lineage import relations, selectors, trace
from ade_platform.lib.lineage.build import Builder, LineageInputs, WarehouseInfo, build_lineage
from ade_platform.lib.lineage.render import mermaid
from tests.helpers import NIGHTLY_JOBS, revenue_dashboard

P = "shop"


def _node(kind: str, name: str, deps: list[str], tags: list[str] = (), path: str = "", schema: str = "main"):
    return {
        "resource_type": kind,
        "name": name,
        "package_name": P,
        "database": "wh",
        "schema": schema,
        "alias": name,
        "tags": list(tags),
        "original_file_path": path or f"models/{name}.sql",
        "config": {"materialized": "table" if kind == "model" else None},
        "depends_on": {"nodes": deps},
    }


def _manifest() -> dict[str, Any]:
    src = f"source.{P}.raw.orders"
    nodes = {
        f"model.{P}.stg_orders": _node(
            "model", "stg_orders", [src], ["staging"], "models/staging/stg_orders.sql"
        ),
        f"model.{P}.stg_customers": _node(
            "model",
            "stg_customers",
            [f"seed.{P}.customers_seed"],
            ["staging"],
            "models/staging/stg_customers.sql",
        ),
        f"seed.{P}.customers_seed": _node("seed", "customers_seed", [], path="seeds/customers_seed.csv"),
        f"model.{P}.orders": _node(
            "model",
            "orders",
            [f"model.{P}.stg_orders", f"model.{P}.stg_customers"],
            ["nightly"],
            "models/marts/orders.sql",
        ),
        f"model.{P}.revenue": _node(
            "model",
            "revenue",
            [f"model.{P}.orders"],
            ["nightly", "finance"],
            "models/marts/finance/revenue.sql",
        ),
        f"test.{P}.not_null_orders_id": {
            **_node("test", "not_null_orders_id", [f"model.{P}.orders"]),
            "attached_node": f"model.{P}.orders",
        },
    }
    sources = {
        src: {
            "resource_type": "source",
            "name": "orders",
            "source_name": "raw",
            "identifier": "orders",
            "package_name": P,
            "database": "wh",
            "schema": "raw",
            "original_file_path": "models/sources.yml",
            "depends_on": {"nodes": []},
        }
    }
    return {"metadata": {"project_name": P, "adapter_type": "duckdb"}, "nodes": nodes, "sources": sources}


@pytest.fixture(scope="module")
def index() -> dict[str, Any]:
    return build_lineage_index(_manifest())


def _ids(sel: selectors.Selection) -> set[str]:
    return {u.split(".")[-1] for u in sel.nodes}


@pytest.mark.parametrize(
    ("select", "exclude", "expected"),
    [
        (["orders"], [], {"orders"}),
        (["+orders"], [], {"orders", "stg_orders", "stg_customers", "customers_seed", "orders_src"}),
        (["orders+"], [], {"orders", "revenue", "not_null_orders_id"}),
        (["1+orders"], [], {"orders", "stg_orders", "stg_customers"}),
        (["tag:nightly"], [], {"orders", "revenue"}),
        (["tag:nightly,tag:finance"], [], {"revenue"}),
        (["path:models/staging"], [], {"stg_orders", "stg_customers"}),
        (["stg_*"], [], {"stg_orders", "stg_customers"}),
        (["source:raw+"], ["revenue"], {"orders_src", "stg_orders", "orders", "not_null_orders_id"}),
        (["resource_type:seed"], [], {"customers_seed"}),
        (
            ["@stg_orders"],
            [],
            {
                "stg_orders",
                "orders",
                "revenue",
                "not_null_orders_id",
                "stg_customers",
                "customers_seed",
                "orders_src",
            },
        ),
    ],
)
def test_selector_methods(index, select, exclude, expected) -> None:
    sel = selectors.evaluate(select, exclude, index)
    names = {("orders_src" if u.startswith("source.") else u.split(".")[-1]) for u in sel.nodes}
    assert names == expected and not sel.unresolvable


def test_state_selectors_are_unresolvable_not_guessed(index) -> None:
    sel = selectors.evaluate(["state:modified+", "orders"], [], index)
    assert _ids(sel) == {"orders"} and sel.unresolvable == ["state:modified+"]


def test_parse_commands_from_steps_and_shell() -> None:
    cmds = selectors.parse_dbt_commands(
        "cd /opt/dbt && dbt deps && dbt build --select tag:nightly --exclude revenue -t prod"
    )
    assert [c.subcommand for c in cmds] == ["deps", "build"]
    assert cmds[1].select == ["tag:nightly"] and cmds[1].exclude == ["revenue"] and cmds[1].builds
    assert selectors.parse_dbt_commands("dbt run -s 'stg_orders orders'")[0].select == ["stg_orders orders"]


def test_built_by_keeps_what_the_command_refreshes(index) -> None:
    (cmd,) = selectors.parse_dbt_commands("dbt run --select +orders")
    assert _ids(selectors.built_by(cmd, index)) == {"orders", "stg_orders", "stg_customers"}
    (seed,) = selectors.parse_dbt_commands("dbt seed")
    assert _ids(selectors.built_by(seed, index)) == {"customers_seed"}
    (test,) = selectors.parse_dbt_commands("dbt test --select orders")
    assert not selectors.built_by(test, index).nodes


def test_relations_normalize_and_resolve() -> None:
    assert relations.parse_relation('"WH"."Main"."Orders"', "snowflake").dotted == "wh.main.orders"
    assert relations.parse_relation("proj.Data.Orders", "bigquery").dotted == "proj.Data.Orders"
    idx = relations.RelationIndex(
        [relations.make_key("wh", "main", "orders"), relations.make_key("wh", "raw", "orders")]
    )
    assert idx.resolve(relations.make_key(None, "main", "orders")).dotted == "wh.main.orders"
    assert idx.resolve(relations.make_key(None, None, "orders")) is None  # ambiguous
    keys = relations.tables_in_sql(
        "with o as (select * from main.orders) select count(*) from o join raw.orders r using (id), read_csv('x.csv')",
        "duckdb",
    )
    assert {k.dotted for k in keys} == {"main.orders", "raw.orders"}


def _inputs(index: dict[str, Any]) -> LineageInputs:
    snapshot = {
        "tables": [
            {
                "database": "WH",
                "schema": "MAIN",
                "name": "ORDERS",
                "table_type": "BASE TABLE",
                "columns": [{"name": "id"}, {"name": "amount"}],
            },
            {
                "database": "wh",
                "schema": "main",
                "name": "revenue",
                "columns": [{"name": "day"}, {"name": "total"}],
            },
            {"database": "wh", "schema": "raw", "name": "orders", "columns": [{"name": "id"}]},
            {"database": "wh", "schema": "main", "name": "manual_upload", "columns": [{"name": "x"}]},
        ]
    }
    return LineageInputs(
        index=index,
        dbt_warehouse="wh",
        warehouses={"wh": WarehouseInfo("wh", "duckdb", snapshot)},
        bi=revenue_dashboard(
            [
                {
                    "id": "70",
                    "title": "Daily revenue",
                    "sql": "select day, sum(total) from main.revenue group by 1",
                },
                {
                    "id": "71",
                    "title": "Orders",
                    "tables": [{"relation": "wh.main.orders", "how": "explore_sql_table_name"}],
                },
                {"id": "72", "title": "Broken", "sql": "select sum(discount) from main.orders"},
            ]
        ),
        dbt_cloud_jobs=NIGHTLY_JOBS,
        orchestrators={
            "airflow": {
                "dags": [
                    {
                        "dag_id": "staging",
                        "tasks": [{"task_id": "run", "dbt_command": "dbt run -s path:models/staging"}],
                    }
                ]
            },
            "dagster": {
                "dags": [{"dag_id": "build_everything", "asset_keys": ["stg_customers", "raw/orders"]}]
            },
        },
        builders=[Builder("prefect", "seed-flow/prod", select=["resource_type:seed"])],
    )


@pytest.fixture(scope="module")
def lineage(index) -> dict[str, Any]:
    return build_lineage(_inputs(index))


def _edge(lineage, src: str, dst: str) -> dict[str, Any]:
    hits = [e for e in lineage["edges"] if e["from"].endswith(src) and e["to"].endswith(dst)]
    assert hits, f"no edge {src} -> {dst}"
    return hits[0]


def test_every_edge_kind(lineage) -> None:
    assert _edge(lineage, "table:wh.main.revenue", "tile:70")["how"] == "sql_parse"
    assert _edge(lineage, "table:wh.main.orders", "tile:71")["how"] == "explore_sql_table_name"
    assert _edge(lineage, f"model.{P}.orders", "table:wh.main.orders")["how"] == "relation_match"
    assert _edge(lineage, "table:wh.raw.orders", f"source.{P}.raw.orders")["how"] == "relation_match"
    assert _edge(lineage, f"model.{P}.stg_orders", f"model.{P}.orders")["how"] == "manifest"
    assert _edge(lineage, "dbt_cloud:job:42", f"model.{P}.revenue")["how"] == "selector"
    assert _edge(lineage, "airflow:dag:staging", f"model.{P}.stg_orders")["how"] == "selector"
    assert (
        _edge(lineage, "dagster:job:build_everything", f"model.{P}.stg_customers")["how"] == "asset_selection"
    )
    assert _edge(lineage, "prefect:deployment:seed-flow/prod", f"seed.{P}.customers_seed")["how"] == "config"
    assert _edge(lineage, "tile:70", "dashboard:7")["how"] == "inventory"
    # a table no dbt node builds is still a node (observed in the warehouse)
    assert any(n["id"].endswith("main.manual_upload") and n.get("observed") for n in lineage["nodes"])


def test_works_with_any_subset(index) -> None:
    only_bi = build_lineage(LineageInputs(bi=_inputs(index).bi))
    assert any(n["kind"] == "tile" for n in only_bi["nodes"]) and only_bi["unresolved"]
    only_dbt = build_lineage(LineageInputs(index=index))
    assert not any(n["system"] in ("looker", "airflow") for n in only_dbt["nodes"])
    assert build_lineage(LineageInputs())["nodes"] == []


def test_trace_from_dashboard_reaches_sources_and_builders(lineage) -> None:
    v = trace.views(lineage)
    start = trace.find_start(v, "dashboard", "Revenue", "looker")
    w = trace.walk(v, start, "upstream")
    names = {v["nodes"][n].get("unique_id") for n in w.nodes}
    assert {
        f"model.{P}.revenue",
        f"model.{P}.orders",
        f"model.{P}.stg_orders",
        f"source.{P}.raw.orders",
    } <= names
    assert {b["builder"] for b in trace.builders_of(v, f"dbt:model.{P}.revenue")} == {"dbt_cloud:job:42"}
    capped = trace.walk(v, start, "upstream", max_nodes=3)
    assert capped.truncated and len(capped.nodes) == 3
    with pytest.raises(trace.LineageLookupError) as err:
        trace.find_start(v, "dbt_node", "nope")
    assert err.value.code == "node_not_found"
    graph = mermaid([v["nodes"][n] for n in w.nodes], w.edges, {start: "failed"})
    assert graph.startswith("graph LR") and "classDef failed" in graph


def test_health_of_each_hop_from_the_newest_snapshots(lineage, index) -> None:
    v = trace.views(lineage)
    run_results = {
        "metadata": {"generated_at": "2026-01-01T00:00:00Z"},
        "results": [
            {"unique_id": f"model.{P}.stg_orders", "status": "error", "message": "Binder Error: column x"},
            {"unique_id": f"model.{P}.orders", "status": "skipped"},
            {"unique_id": f"model.{P}.revenue", "status": "skipped"},
        ],
    }
    sources = {
        "results": [{"unique_id": f"source.{P}.raw.orders", "status": "error", "max_loaded_at": "2025-01-01"}]
    }
    bi_health = {
        "looker": {
            "dashboards": [
                {
                    "id": "7",
                    "elements": [{"id": "72", "status": "error", "error": "column discount not found"}],
                }
            ]
        }
    }
    runs = {"runs": [{"id": 9, "job_id": 42, "status": "error"}]}
    health = trace.Health(
        trace.HealthInputs(
            run_results=run_results, index=index, sources=sources, bi_health=bi_health, dbt_cloud_runs=runs
        )
    )
    assert trace.status_of(health.of(v["nodes"][f"dbt:model.{P}.stg_orders"])) == "failed"
    assert trace.status_of(health.of(v["nodes"][f"dbt:model.{P}.orders"])) == "warn"
    assert trace.status_of(health.of(v["nodes"][f"dbt:source.{P}.raw.orders"])) == "stale"
    assert trace.status_of(health.of(v["nodes"]["dbt_cloud:job:42"])) == "failed"
    tile = v["nodes"][trace.find_start(v, "tile", "72", "looker")]
    assert health.of(tile)["error"] == "column discount not found"
    assert health.job_history["dbt_cloud:job:42"][0]["id"] == 9
