"""Warehouse domain logic: snapshots, manifest relations, drift (and since when), PII, freshness, duplicates."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from ade_platform.clients.warehouses.base import jsonable, safe_message, unique_columns
from ade_platform.lib.warehouse import drift, freshness, manifest, pii
from ade_platform.lib.warehouse import schema as wschema
from ade_platform.lib.warehouse.duplicates import duplicates_answer, severity


def row(table: str, column: str, dtype: str, position: int, schema: str = "main") -> wschema.ColumnRow:
    return wschema.ColumnRow("demo", schema, table, "BASE TABLE", column, dtype, True, position)


def snapshot(*tables: tuple[str, list[tuple[str, str]]]) -> dict[str, Any]:
    rows = [row(t, c, d, i) for t, cols in tables for i, (c, d) in enumerate(cols, start=1)]
    return wschema.build_snapshot("demo", "duckdb", rows)


MANIFEST = {
    "metadata": {"project_name": "shop"},
    "nodes": {
        "model.shop.orders": {
            "resource_type": "model", "name": "orders", "package_name": "shop", "database": "demo",
            "schema": "main", "alias": "orders", "config": {"materialized": "table"}, "tags": [],
            "columns": {
                "order_id": {"name": "order_id", "data_type": "integer"},
                "status": {"name": "status"},
                "amount": {"name": "amount"},
                "email": {"name": "email", "tags": ["pii"]},
            },
        },
        "model.shop.eph": {"resource_type": "model", "name": "eph", "schema": "main", "config": {"materialized": "ephemeral"}},
        "test.shop.unique_orders_order_id": {
            "resource_type": "test", "attached_node": "model.shop.orders",
            "test_metadata": {"name": "unique", "kwargs": {"column_name": "order_id"}},
        },
        "test.shop.unique_expr": {
            "resource_type": "test", "attached_node": "model.shop.orders",
            "test_metadata": {"name": "unique", "kwargs": {"column_name": "concat(a, b)"}},
        },
        "test.shop.combo": {
            "resource_type": "test", "depends_on": {"nodes": ["model.shop.orders"]},
            "test_metadata": {"name": "unique_combination_of_columns", "kwargs": {"combination_of_columns": ["order_id", "status"]}},
        },
    },
    "sources": {
        "source.shop.raw.customers": {
            "resource_type": "source", "name": "customers", "identifier": "customers", "schema": "raw",
            "database": "demo", "columns": {"id": {"name": "id"}},
        }
    },
}  # fmt: skip
CATALOG = {
    "nodes": {
        "model.shop.orders": {
            "columns": {
                "ORDER_ID": {"name": "order_id", "type": "INTEGER", "index": 1},
                "STATUS": {"name": "status", "type": "VARCHAR", "index": 2},
                "AMOUNT": {"name": "amount", "type": "DOUBLE", "index": 3},
                "EMAIL": {"name": "email", "type": "VARCHAR", "index": 4},
            }
        }
    }
}
ORDERS = [("order_id", "INTEGER"), ("status", "VARCHAR"), ("amount", "DOUBLE"), ("email", "VARCHAR")]


def test_snapshot_groups_columns_drops_system_schemas_and_fingerprints() -> None:
    rows = [row("orders", "id", "INTEGER", 1), row("columns", "x", "VARCHAR", 1, schema="information_schema")]
    data = wschema.build_snapshot("demo", "duckdb", rows)
    assert [t["name"] for t in data["tables"]] == ["orders"] and data["column_count"] == 1
    same = wschema.build_snapshot("demo", "duckdb", list(reversed(rows)))
    assert same["fingerprint"] == data["fingerprint"]
    changed = wschema.build_snapshot("demo", "duckdb", [row("orders", "id", "BIGINT", 1)])
    assert changed["fingerprint"] != data["fingerprint"]
    assert wschema.build_snapshot("demo", "duckdb", rows, schemas=["raw"])["tables"] == []


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("t", ["t"]),
        ("s.t", ["s", "t"]),
        ("db.s.t", ["db", "s", "t"]),
        ('"My Schema"."a.b"', ["My Schema", "a.b"]),
        ("`p.d`.t", ["p.d", "t"]),
    ],
)
def test_split_name(text: str, parts: list[str]) -> None:
    assert wschema.split_name(text) == parts


@pytest.mark.parametrize("text", ["", "a..b", "a.b.c.d", '"unbalanced', "."])
def test_split_name_rejects_bad_names(text: str) -> None:
    with pytest.raises(ValueError):
        wschema.split_name(text)


def test_schema_view_and_lookup_failures() -> None:
    data = snapshot(("orders", ORDERS), ("customers", [("id", "INTEGER")]))
    one = wschema.schema_view(data, ["main"], "ORDERS", 100)
    assert one["column_count"] == 4 and one["columns"][0] == {
        "column_name": "order_id", "ordinal_position": 1, "data_type": "INTEGER", "is_nullable": "YES",
        "column_default": None, "character_maximum_length": None, "numeric_precision": None, "numeric_scale": None,
    }  # fmt: skip
    everything = wschema.schema_view(data, ["demo", "main"], None, 100)
    assert everything["table_count"] == 2 and not everything["truncated"]
    assert wschema.schema_view(data, ["main"], None, 2)["truncated"] is True
    for parts, table, code in ((["nope"], None, "schema_not_found"), (["main"], "nope", "table_not_found")):
        with pytest.raises(wschema.LookupFailure) as err:
            wschema.schema_view(data, parts, table, 100)
        assert err.value.code == code
    index = wschema.index_tables(data)
    assert wschema.resolve_table(index, ["orders"], "orders")["name"] == "orders"
    with pytest.raises(wschema.LookupFailure):
        wschema.resolve_table(index, ["raw", "orders"], "raw.orders")


def test_relations_types_tags_and_unique_keys() -> None:
    rels = manifest.relations(MANIFEST, CATALOG)
    assert set(rels) == {"model.shop.orders", "source.shop.raw.customers"}  # ephemeral models have no table
    orders = rels["model.shop.orders"]
    declared = {c.name: (c.data_type, c.type_source) for c in orders.columns}
    assert declared["order_id"] == ("integer", "manifest") and declared["amount"] == ("DOUBLE", "catalog")
    assert manifest.find_model(rels, "ORDERS")[0] is orders
    assert manifest.find_model(rels, "ordrs") == (None, ["orders"])
    keys = {(k.relation_id, k.columns) for k in manifest.unique_keys(MANIFEST)}
    assert keys == {("model.shop.orders", ("order_id",)), ("model.shop.orders", ("order_id", "status"))}


def test_drift_names_renames_drops_and_retypes_with_since_when() -> None:
    rels = manifest.relations(MANIFEST, CATALOG)
    orders = rels["model.shop.orders"]
    v1 = snapshot(("orders", ORDERS))
    v2 = snapshot(
        (
            "orders",
            [
                ("order_id", "INTEGER"),
                ("order_status", "VARCHAR"),
                ("amount", "VARCHAR"),
                ("email", "VARCHAR"),
            ],
        )
    )
    v3 = snapshot(("orders", [("order_id", "INTEGER"), ("order_status", "VARCHAR"), ("amount", "VARCHAR")]))
    assert drift.compare(orders, v1["tables"][0], "duckdb")["drift_detected"] is False
    report = drift.compare(orders, v3["tables"][0], "duckdb")
    assert [c["column_name"] for c in report["removed_from_warehouse"]] == ["status", "email"]
    assert [c["column_name"] for c in report["added_in_warehouse"]] == ["order_status"]
    assert report["type_changed"][0]["column_name"] == "amount"
    assert report["type_changed"][0]["declared_type_source"] == "catalog"
    assert report["likely_renames"] == [{"from": "status", "to": "order_status"}]
    versions = {"c": v3, "b": v2, "a": v1}
    history = [drift.SnapshotRef(v, f"t-{v}") for v in ("c", "b", "a")]
    drift.since_when(report, history, lambda v: versions[v]["tables"][0], "duckdb")
    by_name = {
        c["column_name"]: c["since"] for c in report["removed_from_warehouse"] + report["type_changed"]
    }
    assert by_name["status"]["first_seen_version"] == "b" and by_name["email"]["first_seen_version"] == "c"
    assert by_name["amount"]["first_seen_version"] == "b" and not by_name["amount"]["at_or_before"]
    missing = drift.compare(orders, None, "duckdb")
    assert missing["relation_missing"] and len(missing["removed_from_warehouse"]) == 4


def test_drift_summary_separates_breaking_changes_from_undocumented_columns() -> None:
    rels = manifest.relations(MANIFEST, CATALOG)
    tables = {"orders": snapshot(("orders", [*ORDERS, ("note", "VARCHAR")]))["tables"][0]}
    summary = drift.summarize(rels, lambda r: tables.get(r.identifier), "duckdb")
    severities = {r["unique_id"]: r["severity"] for r in summary["relations"]}
    # `note` is unknown to manifest and catalog: a warning; the source's table is missing: an error
    assert severities == {"model.shop.orders": "warn", "source.shop.raw.customers": "error"}
    assert summary["errors"] == 1 and summary["warnings"] == 1


def test_new_untagged_pii_columns() -> None:
    rels = manifest.by_table(manifest.relations(MANIFEST, CATALOG))
    before = snapshot(("orders", ORDERS[:3]))
    after = snapshot(
        ("orders", [*ORDERS, ("phone_number", "VARCHAR"), ("note", "VARCHAR")]),
        ("people", [("first_name", "VARCHAR")]),
    )
    found = pii.new_untagged_pii(before, after, rels, pii.patterns_from(), ["pii"])
    assert [(f["table"], f["column"]) for f in found] == [
        ("main.orders", "phone_number"),
        ("main.people", "first_name"),
    ]
    assert found[0]["pii_pattern_matched"] == "phone" and found[1]["new_table"] is True
    assert pii.new_untagged_pii(None, after, rels) == []  # no baseline, nothing is new


@pytest.mark.parametrize(
    ("hours", "warn", "error", "status"),
    [
        (1.0, 12, 24, "pass"),
        (13.0, 12, 24, "warn"),
        (30.0, 12, 24, "error"),
        (30.0, None, 24, "error"),
        (None, 12, 24, "error"),
    ],
)
def test_freshness_verdict(hours: float | None, warn: float | None, error: float, status: str) -> None:
    assert freshness.verdict(hours, warn, error) == status


def test_freshness_answer_handles_dates_naive_aware_and_empty() -> None:
    now = datetime(2026, 2, 19, 6, 0, tzinfo=UTC)
    assert (
        freshness.freshness_answer("t", "ts", datetime(2026, 2, 19, 4, 30), 6, now)["staleness_hours"] == 1.5
    )
    aware = datetime(2026, 2, 19, 5, 0, tzinfo=UTC) + timedelta(hours=0)
    answer = freshness.freshness_answer("t", "ts", aware.isoformat(), 0.5, now, 10)
    assert (
        answer["is_fresh"] is False
        and answer["max_timestamp"] == "2026-02-19T05:00:00Z"
        and answer["row_count_sampled"] == 10
    )
    assert freshness.freshness_answer("t", "d", date(2026, 2, 18), 48, now)["staleness_hours"] == 30.0
    empty = freshness.freshness_answer("t", "ts", None, 24, now, 0)
    assert empty["max_timestamp"] is None and empty["staleness_hours"] is None and empty["is_fresh"] is False


@pytest.mark.parametrize(
    ("rate", "keys", "level"),
    [(0.0, 0, "none"), (0.05, 1, "low"), (0.1, 3, "medium"), (1.0, 9, "medium"), (1.01, 9, "high")],
)
def test_duplicate_severity(rate: float, keys: int, level: str) -> None:
    assert severity(rate, keys) == level


def test_duplicates_answer_shape() -> None:
    summary = {
        "TOTAL_ROWS": 10582,
        "DISTINCT_KEY_COUNT": 10478,
        "DUPLICATE_KEY_COUNT": 104,
        "DUPLICATE_ROW_COUNT": 208,
    }
    samples = [{"ORDER_ID": i, "AMOUNT": 1.5, "ADE_OCCURRENCES": 2, "ADE_RN": 1} for i in range(7)]
    answer = duplicates_answer("db.s.orders", ["order_id"], summary, samples)
    assert answer["duplication_rate_pct"] == 1.97 and answer["severity"] == "high"
    assert len(answer["sample_duplicates"]) == 5
    assert answer["sample_duplicates"][0] == {
        "order_id": 0,
        "occurrence_count": 2,
        "sample_row": {"ORDER_ID": 0, "AMOUNT": 1.5},
    }


def test_error_messages_keep_identifiers_and_drop_values_and_paths() -> None:
    sql = "select cast(name as int) from raw.customers where nme = 'secret'"
    message = "Conversion Error: Could not convert string 'Alice' to INT32 in 'name' at /srv/data/db.duckdb\nLINE 1: ..."
    safe = safe_message(message, sql)
    assert "Alice" not in safe and "'name'" in safe and "/home" not in safe and "LINE" not in safe
    assert "secret" not in safe_message("value 'secret' is bad", sql)


def test_values_become_json() -> None:
    assert jsonable(Decimal("2.00")) == 2 and jsonable(Decimal("1.25")) == 1.25
    assert jsonable(datetime(2026, 1, 1, 12)) == "2026-01-01T12:00:00" and jsonable(b"\x00\x01") == "AAE="
    assert jsonable({"a": [date(2026, 1, 2)]}) == {"a": ["2026-01-02"]}
    assert unique_columns(["a", "b", "a", "a"]) == ["a", "b", "a_2", "a_3"]
