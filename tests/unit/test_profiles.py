"""Relation profiles on a real DuckDB: what one query says, what it never selects, and which changes count."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from ade_platform.lib.guard.policy import GuardPolicy
from ade_platform.lib.profiles import RelationProfile, compare, profile_queries, profile_relation
from ade_platform.lib.profiles.model import ColumnProfile
from ade_platform.lib.profiles.sql import UnsafeName, protected_columns
from ade_platform.lib.sql_protect import ProtectRules
from ade_platform.store import StoreReader, StoreWriter
from ade_platform.store.profiles import (
    MAX_PER_RELATION,
    kept_indexes,
    latest_profile,
    profile_history,
    record_profile,
)

METHODS = ("credit_card", "bank_transfer", "coupon", "gift_card")


def _orders(con: duckdb.DuckDBPyConnection, n: int, **fault: object) -> None:
    """n orders with a steady mix of payment methods; `fault` breaks one thing the way an upstream change would:
    `drop` a payment method's rows, `null_amount` on a quarter of the rows, `dupes` first rows loaded twice."""
    methods = ", ".join(f"'{m}'" for m in METHODS)
    con.execute(
        f"""CREATE OR REPLACE TABLE orders AS
        WITH base AS (
            SELECT CAST(i AS INTEGER) AS order_id, 'user' || i || '@example.com' AS customer_email,
                CASE WHEN i % 10 = 0 THEN 'credit_card' ELSE [{methods}][i % 4 + 1] END AS payment_method,
                CASE WHEN {bool(fault.get("null_amount"))} AND i % 4 = 0 THEN NULL
                    ELSE CAST(10 + (i % 37) * 1.5 AS DECIMAL(10,2)) END AS amount,
                CAST(DATE '2026-11-01' + CAST(i % 28 AS INTEGER) AS DATE) AS ordered_on
            FROM range({n}) AS t(i)
        ), kept AS (SELECT * FROM base WHERE payment_method <> '{fault.get("drop", "")}')
        SELECT * FROM kept UNION ALL (SELECT * FROM kept ORDER BY order_id LIMIT {int(fault.get("dupes", 0))})"""
    )


COLUMNS = [
    ("order_id", "INTEGER"),
    ("customer_email", "VARCHAR"),
    ("payment_method", "VARCHAR"),
    ("amount", "DECIMAL(10,2)"),
    ("ordered_on", "DATE"),
]


def _profile(con: duckdb.DuckDBPyConnection, *, seen: list[str] | None = None) -> RelationProfile:
    def run(sql: str) -> list[tuple]:
        if seen is not None:
            seen.append(sql)
        return con.execute(sql).fetchall()

    return profile_relation(
        run,
        "duckdb",
        "demo",
        ("memory", "main", "orders"),
        COLUMNS,
        unique_keys=["order_id", "order_id,payment_method"],
        protected={"customer_email"},
    )


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    _orders(connection, 1000)
    return connection


def test_one_query_profiles_counts_ranges_mix_and_duplicates(con: duckdb.DuckDBPyConnection) -> None:
    seen: list[str] = []
    profile = _profile(con, seen=seen)
    assert len(seen) == 2  # the aggregate, then one grouped query for the mixes
    assert profile.relation == "memory.main.orders" and profile.row_count == 1000
    amount = profile.columns["amount"]
    assert (amount.nulls, amount.min, amount.max) == (0, 10.0, 64.0)
    assert amount.sum == pytest.approx(float(con.execute("SELECT SUM(amount) FROM orders").fetchone()[0]))
    assert profile.columns["ordered_on"].min == "2026-11-01" and profile.columns["ordered_on"].sum is None
    method = profile.columns["payment_method"]
    assert method.distinct == 4 and method.top is not None
    assert dict(method.top) == dict(
        con.execute("SELECT payment_method, COUNT(*) FROM orders GROUP BY 1").fetchall()
    )
    assert method.top[0][0] == "credit_card"  # most frequent first
    assert profile.columns["order_id"].top is None  # 1000 distinct values: past the mix bound
    assert profile.duplicates == {"order_id": 0, "order_id,payment_method": 0}
    assert RelationProfile.from_state(profile.as_state()) == profile


def test_protected_columns_are_counted_never_selected(con: duckdb.DuckDBPyConnection) -> None:
    seen: list[str] = []
    profile = _profile(con, seen=seen)
    email = profile.columns["customer_email"]
    assert email.protected and email.nulls == 0
    assert email.distinct is not None and 900 <= email.distinct <= 1100  # approximate (HyperLogLog)
    assert (email.min, email.max, email.sum, email.top) == (None, None, None, None)
    assert "example.com" not in str(profile.as_state())
    for sql in seen:
        for column in sqlglot.parse_one(sql, read="duckdb").find_all(exp.Column):
            if column.name == "customer_email":
                outer = column.parent.parent if isinstance(column.parent, exp.Distinct) else column.parent
                assert isinstance(outer, exp.Count | exp.ApproxDistinct), sql


def test_protected_columns_come_from_pii_names_dbt_tags_and_exclusions() -> None:
    rules = ProtectRules(GuardPolicy(exclusion_patterns=("*.hr.*",)), tagged=frozenset({("orders", "note")}))
    names = ["order_id", "Email Address", "note", "amount"]
    assert protected_columns(("db", "main", "orders"), names, rules) == {"Email Address", "note"}
    assert protected_columns(("db", "hr", "salaries"), names, rules) == set(names)
    whole = ProtectRules(GuardPolicy(), tagged=frozenset({("orders", "*")}))
    assert protected_columns("db.main.orders", names, whole) == set(names)


HOSTILE_TABLE = 'we"ird; DROP TABLE orders; --'
HOSTILE_COLUMN = 'a"b) FROM orders; --'


def test_hostile_identifiers_are_quoted_and_run(con: duckdb.DuckDBPyConnection) -> None:
    quoted_col = '"' + HOSTILE_COLUMN.replace('"', '""') + '"'
    con.execute('CREATE SCHEMA "s.x"')
    con.execute(f'CREATE TABLE "s.x"."{HOSTILE_TABLE.replace(chr(34), chr(34) * 2)}" ({quoted_col} VARCHAR)')
    con.execute(
        f"INSERT INTO \"s.x\".\"{HOSTILE_TABLE.replace(chr(34), chr(34) * 2)}\" VALUES ('v'), ('v'), (NULL)"
    )
    profile = profile_relation(
        lambda sql: con.execute(sql).fetchall(),
        "duckdb",
        "demo",
        ("memory", "s.x", HOSTILE_TABLE),
        [(HOSTILE_COLUMN, "VARCHAR")],
        unique_keys=[(HOSTILE_COLUMN,)],
    )
    column = profile.columns[HOSTILE_COLUMN]
    assert (profile.row_count, column.nulls, column.distinct, column.top) == (3, 1, 1, (("v", 2),))
    assert profile.duplicates == {HOSTILE_COLUMN: 1}
    assert con.execute("SELECT COUNT(*) FROM orders").fetchone() == (1000,)  # nothing was dropped


@pytest.mark.parametrize("dialect", ["duckdb", "snowflake", "bigquery"])
def test_generated_sql_parses_back_with_the_same_names(dialect: str) -> None:
    column = HOSTILE_COLUMN if dialect != "bigquery" else "Flexible Name-1"
    relation = ("Prod-DB", "Sales", "Orders Table" if dialect == "bigquery" else HOSTILE_TABLE)
    columns = [
        (column, "VARCHAR"),
        ("AMOUNT", "NUMBER(12,2)"),
        ("CREATED", "TIMESTAMP_NTZ"),
        ("doc", "VARIANT"),
    ]
    queries = profile_queries(dialect, relation, columns, unique_keys=[column, f"{column},AMOUNT"])
    for sql in (queries.aggregate, queries.mix([column, "AMOUNT"])):
        assert sql is not None
        tree = sqlglot.parse_one(sql, read=dialect)
        table = next(tree.find_all(exp.Table))
        assert [p.name for p in table.parts] == list(relation)
        assert {c.name for c in tree.find_all(exp.Column)} <= {column, "AMOUNT", "CREATED", "doc"}
        assert column in {c.name for c in tree.find_all(exp.Column)}
    assert len(queries.outputs) == len(sqlglot.parse_one(queries.aggregate, read=dialect).selects)
    assert ("doc", "distinct") not in queries.outputs  # a variant is counted for nulls only


def test_names_bigquery_cannot_quote_are_refused() -> None:
    with pytest.raises(UnsafeName):
        profile_queries("bigquery", ("p", "d", "t"), [("a`b", "STRING")])
    with pytest.raises(UnsafeName):
        profile_queries("snowflake", ("p", "d", "t\x00"), [("a", "STRING")])


def test_ordinary_growth_is_no_change(con: duckdb.DuckDBPyConnection) -> None:
    before = _profile(con)
    _orders(con, 1040)
    assert compare(before, _profile(con)) == []


def test_a_vanished_value_is_a_value_mix_change(con: duckdb.DuckDBPyConnection) -> None:
    before = _profile(con)
    _orders(con, 1000, drop="gift_card")
    changes = compare(before, _profile(con))
    mix = next(c for c in changes if c.kind == "value_mix")
    assert mix.column == "payment_method" and mix.values == ("gift_card",)
    assert mix.detail == "`payment_method`: `gift_card` 250 \u2192 0 rows"
    assert 0.15 < mix.magnitude < 0.3


def test_a_null_jump_is_a_nulls_change(con: duckdb.DuckDBPyConnection) -> None:
    before = _profile(con)
    _orders(con, 1000, null_amount=True)
    changes = compare(before, _profile(con))
    assert [c.kind for c in changes if c.column == "amount"][:1] == ["nulls"]
    nulls = next(c for c in changes if c.kind == "nulls")
    assert nulls.detail == "`amount`: nulls 0% \u2192 25%" and nulls.magnitude == pytest.approx(0.25)


def test_new_duplicates_on_a_declared_key(con: duckdb.DuckDBPyConnection) -> None:
    before = _profile(con)
    _orders(con, 1000, dupes=3)
    changes = compare(before, _profile(con))
    kinds = {(c.kind, c.column) for c in changes}
    assert ("duplicates", "order_id") in kinds and ("duplicates", None) in kinds
    assert not any(c.kind == "row_count" for c in changes)  # 3 rows more is growth, not a volume change
    dup = next(c for c in changes if c.column == "order_id")
    assert (dup.before, dup.after, dup.detail) == (0, 3, "`order_id`: duplicate rows 0 \u2192 3")


def test_halved_rows_is_a_row_count_change_first(con: duckdb.DuckDBPyConnection) -> None:
    before = _profile(con)
    _orders(con, 500)
    changes = compare(before, _profile(con))
    assert changes[0].kind == "row_count" and changes[0].detail == "rows 1,000 \u2192 500 (\u221250%)"
    assert changes[0].magnitude == pytest.approx(0.5)


def test_a_remapped_amount_is_a_range_change(con: duckdb.DuckDBPyConnection) -> None:
    before = _profile(con)
    con.execute("UPDATE orders SET amount = amount * 100")
    changes = compare(before, _profile(con))
    assert [(c.kind, c.column) for c in changes] == [("range", "amount")]


def _column(name: str, **fields: object) -> ColumnProfile:
    base: dict = {"type": "VARCHAR", "nulls": 0, "distinct": 100, "min": None, "max": None, "sum": None}
    return ColumnProfile(name=name, top=None, protected=False, **{**base, **fields})  # type: ignore[arg-type]


def test_a_key_collapsing_to_few_values_is_a_distinct_change() -> None:
    def profile(distinct: int) -> RelationProfile:
        return RelationProfile("w", "d.s.t", 1000, {"k": _column("k", distinct=distinct)}, {}, 0.0, 1.0)

    assert [c.kind for c in compare(profile(900), profile(880))] == []
    changes = compare(profile(900), profile(30))
    assert [(c.kind, c.detail) for c in changes] == [("distinct", "`k`: distinct 900 \u2192 30")]


def test_history_is_kept_per_relation_oldest_first_and_bounded(tmp_path: Path) -> None:
    writer, reader = StoreWriter(tmp_path), StoreReader(tmp_path)
    day = 86_400.0
    for i in range(60):  # two months of daily profiles, four builds a day on the last two days
        for build in range(4 if i >= 58 else 1):
            moment = 1_700_000_000.0 + i * day + build * 3600
            profile = RelationProfile("demo", "db.main.orders", 100 + i, {}, {}, moment, 5.0)
            record_profile(writer, profile, source="test")
    record_profile(writer, RelationProfile("demo", "db.main.other", 1, {}, {}, 1.0, 1.0), source="test")
    history = profile_history(reader, "demo", "db.main.orders")
    assert len(history) == 60 + 6
    assert [p.profiled_at for p in history] == sorted(p.profiled_at for p in history)
    latest = latest_profile(reader, "demo", "DB.MAIN.ORDERS")
    assert latest is not None and latest.row_count == 159 and latest == history[-1]
    assert len(profile_history(reader, "demo", "db.main.orders", since=history[-3].profiled_at)) == 3
    assert latest_profile(reader, "demo", "db.main.missing") is None


def test_thinning_keeps_recent_builds_and_one_profile_per_older_day() -> None:
    day = 86_400.0
    hourly = [i * 3600.0 for i in range(24 * 100)]  # a hundred days of hourly builds
    kept = sorted(kept_indexes(hourly))
    assert len(kept) <= MAX_PER_RELATION
    recent = [i for i in kept if hourly[-1] - hourly[i] <= 3 * day]
    assert len(recent) == 3 * 24 + 1
    older_days = {int(hourly[i] // day) for i in kept if i not in recent}
    assert len(older_days) == len([i for i in kept if i not in recent]) >= 60


def test_a_run_skips_and_says_what_fails_and_keeps_its_bounds(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    from ade_platform.lib.errors import CodedError
    from ade_platform.lib.profiles.run import profile_all
    from ade_platform.lib.profiles.targets import Target

    def run(sql: str) -> list[tuple]:  # as the warehouse clients do: their errors are CodedErrors
        if '"slow"' in sql:
            raise CodedError("query_timeout", "the query exceeded 1s and was cancelled")
        try:
            return con.execute(sql).fetchall()
        except duckdb.Error:
            raise CodedError("query_failed", "no such table") from None

    def target(name: str) -> Target:
        return Target(
            f"model.x.{name}", ("memory", "main", name), tuple(COLUMNS), (("order_id",),), frozenset()
        )

    writer, reader = StoreWriter(tmp_path), StoreReader(tmp_path)
    summary = profile_all(
        run,
        "duckdb",
        "demo",
        [target("orders"), target("slow"), target("dropped"), target("orders2")],
        history=lambda relation: profile_history(reader, "demo", relation),
        record=lambda profile: record_profile(writer, profile, "test"),
        max_relations=3,
        budget_seconds=60,
    )
    assert (summary["targets"], summary["profiled"], summary["skipped"]) == (4, 1, 3)
    assert {s["relation"]: s["reason"] for s in summary["skipped_relations"]} == {
        "memory.main.slow": "query_timeout: the query exceeded 1s and was cancelled",
        "memory.main.dropped": "query_failed: no such table",
        "memory.main.orders2": "past max_relations (3)",
    }
    assert latest_profile(reader, "demo", "memory.main.orders") is not None
    assert summary["relations"][0]["failing"] == [] and sum(summary["failing_counts"].values()) == 0
