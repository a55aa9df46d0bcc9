"""SELECT * on the AST, Jinja approximation, compiled-SQL sources and column lineage (lib.dbt, sqlglot)."""

from __future__ import annotations

import pytest

from ade_platform.lib.dbt.column_lineage import column_lineage, known_columns
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.dbt.schema import catalog_index
from ade_platform.lib.dbt.select_star import analyze_sql, scan_models
from ade_platform.lib.dbt.sql_source import dialect_for, node_sql, render_approx, sql_index, supplement
from tests.mcp.dbt_support import PROJECT, catalog, manifest, model, source

IMPORT_CTE = """with source as (select * from "db"."raw"."orders"),
renamed as (select id as order_id, amount from source)
select * from renamed"""


def test_import_cte_and_final_star_over_explicit_columns_do_not_propagate() -> None:
    found = analyze_sql(IMPORT_CTE, "duckdb")
    assert found is not None and found["occurrence_count"] == 2
    scopes = {(o["scope"], o["cte_name"]) for o in found["occurrences"]}
    assert scopes == {("final", None), ("cte", "source")}
    assert found["final_select_star"] and not found["propagates_upstream_columns"]
    assert found["compiled_sql_snippet"] == "select * from renamed"


@pytest.mark.parametrize(
    "sql,propagates",
    [
        ('select * from "db"."main"."orders"', True),
        ("with a as (select * from t) select * from a", True),
        ("with a as (select * from t), b as (select * from a) select * from b", True),
        ("select * from (select * from t) s", True),
        ("select o.*, p.amount from orders o join payments p on o.id = p.id", True),
        ("select * exclude (secret) from t", True),
        ("select * from a union all select * from b", True),
    ],
)
def test_final_stars_that_propagate(sql: str, propagates: bool) -> None:
    found = analyze_sql(sql, "duckdb")
    assert (
        found is not None
        and found["final_select_star"]
        and found["propagates_upstream_columns"] is propagates
    )


@pytest.mark.parametrize("sql", ["select count(*) from t", "select a, b * 2 from t", "select 1"])
def test_no_star_projection(sql: str) -> None:
    assert analyze_sql(sql, "duckdb") is None


def test_unparseable_sql_falls_back_to_a_regex() -> None:
    found = analyze_sql("select * from t where (((", None)
    assert found is not None and found["parsed"] is False and found["occurrence_count"] == 1


def test_scan_orders_propagating_first() -> None:
    rows = [
        ("model.p.a", "a", "s", IMPORT_CTE, "compiled"),
        ("model.p.b", "b", "s", "select * from x", "raw_rendered"),
        ("model.p.c", "c", "s", "select id from x", "compiled"),
        ("model.p.d", "d", "s", None, "missing"),
    ]
    found = scan_models(rows, "duckdb")
    assert [f["node_id"] for f in found] == ["model.p.b", "model.p.a"]
    assert found[0]["sql_source"] == "raw_rendered"


def test_render_approx() -> None:
    raw = (
        "{{ config(materialized='incremental') }}\n{# note #}\n{%- set x = 1 %}"
        "select * from {{ ref('stg_orders') }} join {{ ref('pkg', 'other') }} join {{ source('raw', 'pay') }}\n"
        "{% if is_incremental() %}where ts > (select max(ts) from {{ this }}){% endif %}"
    )
    text = render_approx(raw)
    assert "config" not in text and "note" not in text and "{%" not in text
    assert "from stg_orders join other join raw.pay" in text and "__this__" in text
    assert "__ref__.stg_orders" in render_approx(raw, qualified=True)


def test_sql_index_and_supplement_by_checksum() -> None:
    parse_only = manifest(model("a", raw="select 1"), model("b", raw="select 2"))
    built = manifest(model("a", raw="select 1", compiled="select 1 -- compiled"), model("b", compiled="x"))
    built["nodes"][f"model.{PROJECT}.b"]["checksum"] = {"checksum": "changed"}
    primary, other = sql_index(parse_only), sql_index(built)
    extra = supplement(primary, other)
    assert extra == {f"model.{PROJECT}.a": "select 1 -- compiled"}  # b's file changed since that build
    assert node_sql(primary[f"model.{PROJECT}.a"], extra, f"model.{PROJECT}.a") == (
        "select 1 -- compiled",
        "compiled_last_build",
    )
    assert node_sql(primary[f"model.{PROJECT}.b"], extra, f"model.{PROJECT}.b") == (
        "select 2",
        "raw_rendered",
    )
    assert node_sql(None, None, "model.x.y") == (None, "missing")
    assert (
        dialect_for("snowflake") == "snowflake"
        and dialect_for("sqlserver") == "tsql"
        and dialect_for(None) is None
    )


RAW_ORDERS = f"source.{PROJECT}.raw.orders"
STG = f"model.{PROJECT}.stg_orders"
MART = f"model.{PROJECT}.orders"


@pytest.fixture
def graph() -> tuple[dict, dict]:
    stg_sql = (
        'with source as (select * from "db"."raw"."orders") select id as order_id, amount, status from source'
    )
    mart_sql = (
        'with o as (select * from "db"."analytics"."stg_orders") '
        "select order_id, sum(case when status = 'returned' then 0 else amount end) as net, 1 as one from o "
        "group by order_id"
    )
    mart_raw = (
        "with o as (select * from {{ ref('stg_orders') }}) select order_id, amount * 2 as doubled from o"
    )
    index = build_lineage_index(
        manifest(
            source("orders"),
            model("stg_orders", [RAW_ORDERS], compiled=stg_sql),
            model("orders", [STG], compiled=mart_sql, raw=mart_raw),
        )
    )
    cat = catalog_index(
        catalog(
            {
                RAW_ORDERS: [("id", "INT"), ("amount", "DOUBLE"), ("status", "TEXT"), ("secret", "TEXT")],
                STG: [("order_id", "INT"), ("amount", "DOUBLE"), ("status", "TEXT")],
                MART: [("order_id", "INT"), ("net", "DOUBLE"), ("one", "INT")],
            }
        )
    )
    return index, cat


def test_column_lineage_through_stars_and_ctes(graph: tuple[dict, dict]) -> None:
    index, cat = graph
    stg_sql = 'with source as (select * from "db"."raw"."orders") select id as order_id from source'
    direct = column_lineage(index, cat, STG, "order_id", stg_sql, "compiled", "duckdb")
    assert direct["resolved"] and direct["upstream"] == [
        {"node_id": RAW_ORDERS, "name": "orders", "relation": "db.raw.orders", "column_name": "id",
         "transformation": "direct"}
    ]  # fmt: skip
    mart_sql = (
        'with o as (select * from "db"."analytics"."stg_orders") '
        "select order_id, sum(case when status = 'returned' then 0 else amount end) as net, 1 as one from o "
        "group by order_id"
    )
    net = column_lineage(index, cat, MART, "net", mart_sql, "compiled", "duckdb")
    assert net["resolved"]
    assert {(u["node_id"], u["column_name"], u["transformation"]) for u in net["upstream"]} == {
        (STG, "amount", "derived"),
        (STG, "status", "derived"),
    }
    constant = column_lineage(index, cat, MART, "one", mart_sql, "compiled", "duckdb")
    assert constant["resolved"] and constant["upstream"] == [] and "constants" in constant["reason"]


def test_column_lineage_from_raw_sql(graph: tuple[dict, dict]) -> None:
    index, cat = graph
    raw = render_approx(
        "with o as (select * from {{ ref('stg_orders') }}) select amount * 2 as doubled from o", True
    )
    answer = column_lineage(index, cat, MART, "doubled", raw, "raw_rendered", "duckdb")
    assert answer["resolved"] and answer["upstream"][0]["node_id"] == STG
    assert answer["upstream"][0]["transformation"] == "derived"


def test_column_lineage_says_when_it_cannot(graph: tuple[dict, dict]) -> None:
    index, _ = graph
    no_sql = column_lineage(index, None, MART, "net", None, "missing", "duckdb")
    assert not no_sql["resolved"] and "no SQL" in no_sql["reason"]
    unknown = column_lineage(index, None, MART, "nope", "select a from t", "compiled", "duckdb")
    assert not unknown["resolved"] and unknown["reason"]
    # without a catalog, the star over stg_orders cannot be expanded
    star = column_lineage(
        index, None, STG, "amount", 'select * from "db"."raw"."orders"', "compiled", "duckdb"
    )
    assert not star["resolved"] and "columns unknown for " + RAW_ORDERS in star["reason"]
    assert known_columns(MART, index, None) == []
