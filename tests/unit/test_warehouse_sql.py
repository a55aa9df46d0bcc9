"""The read-only guard and LIMIT rewriting work on the AST: deny by default, never string concatenation."""

from __future__ import annotations

import duckdb
import pytest

from ade_platform.lib.warehouse.sql import (
    SqlInvalid,
    SqlRefused,
    duplicate_sample_sql,
    duplicate_summary_sql,
    max_timestamp_sql,
    prepare_explain,
    prepare_select,
    quote_ident,
    quote_table,
)

REFUSED = [
    ("duckdb", "insert into t values (1)"),
    ("duckdb", "update t set a = 1"),
    ("duckdb", "delete from t"),
    ("duckdb", "create table x as select 1"),
    ("duckdb", "drop table t"),
    ("duckdb", "alter table t add column b int"),
    ("duckdb", "truncate t"),
    ("duckdb", "copy t to 'out.csv'"),
    ("duckdb", "attach 'other.db'"),
    ("duckdb", "set threads = 1"),
    ("duckdb", "pragma table_info('t')"),
    ("duckdb", "install httpfs"),
    ("duckdb", "load httpfs"),
    ("duckdb", "call dbgen(sf = 1)"),
    ("duckdb", "select 1; select 2"),
    ("duckdb", "select 1; drop table t"),
    ("duckdb", "select * into t2 from t"),
    ("duckdb", "select * from t for update"),
    ("duckdb", "select nextval('seq')"),
    ("duckdb", "show tables"),
    ("duckdb", "describe t"),
    ("duckdb", "with d as (delete from t returning *) select * from d"),
    ("snowflake", "merge into t using s on t.id = s.id when matched then delete"),
    ("snowflake", "use database other"),
    ("snowflake", "grant select on table t to role r"),
    ("snowflake", "select system$cancel_all_queries(1)"),
    ("snowflake", "begin"),
    ("bigquery", "insert into d.t (a) values (1)"),
    ("bigquery", "create or replace table d.t as select 1 as a"),
    ("bigquery", "select 1; select 2"),
]
INVALID = [
    ("duckdb", ""),
    ("duckdb", "   "),
    ("duckdb", ";"),
    ("duckdb", "selec 1 frm"),
    ("snowflake", "select ("),
]


@pytest.mark.parametrize(("warehouse", "sql"), REFUSED)
def test_writes_ddl_batches_and_side_effects_are_refused(warehouse: str, sql: str) -> None:
    with pytest.raises(SqlRefused):
        prepare_select(sql, warehouse, 10)
    with pytest.raises(SqlRefused):
        prepare_explain(sql, warehouse)


@pytest.mark.parametrize(("warehouse", "sql"), INVALID)
def test_unparseable_sql_is_invalid(warehouse: str, sql: str) -> None:
    with pytest.raises((SqlInvalid, SqlRefused)):
        prepare_select(sql, warehouse, 10)


@pytest.mark.parametrize(
    ("sql", "limit", "applied", "fetch", "expected"),
    [
        ("select * from t", 100, True, 101, "SELECT * FROM t LIMIT 101"),
        ("select * from t limit 5", 100, False, 5, "SELECT * FROM t LIMIT 5"),
        ("select * from t limit 500", 100, True, 101, "SELECT * FROM t LIMIT 101"),
        ("select * from t limit 500 offset 10", 100, True, 101, "SELECT * FROM t LIMIT 101 OFFSET 10"),
        (
            "with a as (select 1 as x) select * from a",
            10,
            True,
            11,
            "WITH a AS (SELECT 1 AS x) SELECT * FROM a LIMIT 11",
        ),
        ("select 1 union all select 2", 10, True, 11, "SELECT 1 UNION ALL SELECT 2 LIMIT 11"),
        ("select * from t fetch first 3 rows only", 10, False, 3, "SELECT * FROM t LIMIT 3"),
        (
            "select * from t limit 10 percent",
            5,
            True,
            6,
            "SELECT * FROM (SELECT * FROM t LIMIT 10 PERCENT) AS ade_q LIMIT 6",
        ),
        ("values (1), (2)", 1, True, 2, "SELECT * FROM (VALUES (1), (2)) AS ade_q LIMIT 2"),
        ("select 'a; drop table t' as s", 10, True, 11, "SELECT 'a; drop table t' AS s LIMIT 11"),
    ],
)
def test_limit_is_applied_on_the_ast(sql: str, limit: int, applied: bool, fetch: int, expected: str) -> None:
    prepared = prepare_select(sql, "duckdb", limit)
    assert (prepared.limit_applied, prepared.fetch, prepared.sql) == (applied, fetch, expected)


def test_snowflake_top_and_bigquery_limits() -> None:
    assert prepare_select("select top 5 * from t", "snowflake", 2).sql == "SELECT * FROM t LIMIT 3"
    assert prepare_select("select * from `p.d.t`", "bigquery", 7).sql.endswith("LIMIT 8")


def test_generated_statements_run_and_quote_identifiers() -> None:
    con = duckdb.connect()
    con.execute('create schema s; create table s."Odd Name" (id int, "Key" varchar, ts timestamp)')
    con.execute(
        "insert into s.\"Odd Name\" values (1, 'a', '2024-01-01'), (1, 'a', '2024-01-03'), (2, null, null)"
    )
    table = ["s", "Odd Name"]
    assert quote_table(["s", 'a"b'], "duckdb") == '"s"."a""b"'
    assert quote_ident("a`b", "bigquery") == "`a\\`b`"
    newest, count = con.execute(max_timestamp_sql(table, "ts", "duckdb")).fetchone()
    assert str(newest).startswith("2024-01-03") and count == 3
    summary = con.execute(duplicate_summary_sql(table, ["id", "Key"], "duckdb")).fetchone()
    assert summary == (3, 1, 1, 2)  # total, distinct non-null keys, duplicated keys, duplicated rows
    sample = con.execute(duplicate_sample_sql(table, ["id", "Key"], "duckdb", 5)).fetchall()
    assert len(sample) == 1 and sample[0][0] == 1
