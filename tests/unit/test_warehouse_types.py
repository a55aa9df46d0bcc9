"""Warehouse-aware type normalization, table-driven: the same type spelled many ways compares equal."""

from __future__ import annotations

import pytest

from ade_platform.lib.warehouse.types import is_temporal, normalize_type, same_type

SAME = [
    # (warehouse, declared, observed)
    ("snowflake", "TEXT", "VARCHAR"),
    ("snowflake", "STRING", "VARCHAR(16777216)"),
    ("snowflake", "varchar(20)", "TEXT"),
    ("snowflake", "INT", "NUMBER(38,0)"),
    ("snowflake", "integer", "NUMBER(38, 0)"),
    ("snowflake", "BIGINT", "NUMBER"),
    ("snowflake", "NUMBER", "NUMBER(10,2)"),  # a catalog's bare NUMBER matches any precision
    ("snowflake", "DECIMAL(10,2)", "NUMBER(10,2)"),
    ("snowflake", "FLOAT", "DOUBLE"),
    ("snowflake", "REAL", "FLOAT8"),
    ("snowflake", "DATETIME", "TIMESTAMP_NTZ"),
    ("snowflake", "TIMESTAMP_NTZ(9)", "TIMESTAMP"),
    ("snowflake", "TIMESTAMPTZ", "TIMESTAMP_TZ"),
    ("snowflake", "BOOL", "BOOLEAN"),
    ("snowflake", "VARBINARY", "BINARY(8388608)"),
    ("bigquery", "INT64", "BIGINT"),
    ("bigquery", "INTEGER", "INT64"),
    ("bigquery", "STRING", "VARCHAR"),
    ("bigquery", "STRING(10)", "STRING"),
    ("bigquery", "FLOAT64", "FLOAT"),
    ("bigquery", "BOOL", "BOOLEAN"),
    ("bigquery", "NUMERIC", "NUMERIC(38, 9)"),
    ("bigquery", "BIGNUMERIC", "BIGDECIMAL"),
    ("bigquery", "DATETIME", "datetime"),
    ("bigquery", "BYTES", "BINARY"),
    ("bigquery", "RECORD", "STRUCT<a INT64>"),
    ("bigquery", "ARRAY<STRING>", "ARRAY<INT64>"),
    ("duckdb", "TEXT", "VARCHAR"),
    ("duckdb", "STRING", "VARCHAR"),
    ("duckdb", "INT", "INTEGER"),
    ("duckdb", "INT4", "INTEGER"),
    ("duckdb", "INT8", "BIGINT"),
    ("duckdb", "LONG", "BIGINT"),
    ("duckdb", "FLOAT8", "DOUBLE"),
    ("duckdb", "REAL", "FLOAT"),
    ("duckdb", "DATETIME", "TIMESTAMP"),
    ("duckdb", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"),
    ("duckdb", "NUMERIC(10,2)", "DECIMAL(10,2)"),
    ("duckdb", "BLOB", "BYTEA"),
    ("duckdb", "INTEGER[]", "BIGINT[]"),
    ("duckdb", "STRUCT(a INTEGER)", "STRUCT(b VARCHAR)"),
    ("duckdb", "  double   precision ", "DOUBLE"),
]
DIFFERENT = [
    ("snowflake", "NUMBER(38,0)", "FLOAT"),
    ("snowflake", "NUMBER(38,0)", "NUMBER(10,2)"),
    ("snowflake", "INT", "NUMBER(10,2)"),
    ("snowflake", "TIMESTAMP_NTZ", "TIMESTAMP_TZ"),
    ("snowflake", "VARCHAR", "VARIANT"),
    ("snowflake", "DATE", "TIMESTAMP"),
    ("bigquery", "DATETIME", "TIMESTAMP"),  # wall clock vs instant
    ("bigquery", "INT64", "FLOAT64"),
    ("bigquery", "NUMERIC", "BIGNUMERIC"),
    ("duckdb", "INTEGER", "BIGINT"),  # DuckDB integers have sizes; widening is a change
    ("duckdb", "FLOAT", "DOUBLE"),
    ("duckdb", "DOUBLE", "VARCHAR"),
    ("duckdb", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE"),
    ("duckdb", "DECIMAL(10,2)", "DECIMAL(18,3)"),
    ("duckdb", "DATE", "VARCHAR"),
]


@pytest.mark.parametrize(("warehouse", "declared", "observed"), SAME)
def test_aliases_compare_equal(warehouse: str, declared: str, observed: str) -> None:
    assert same_type(declared, observed, warehouse), (
        normalize_type(declared, warehouse),
        normalize_type(observed, warehouse),
    )


@pytest.mark.parametrize(("warehouse", "declared", "observed"), DIFFERENT)
def test_real_changes_compare_different(warehouse: str, declared: str, observed: str) -> None:
    assert not same_type(declared, observed, warehouse)


@pytest.mark.parametrize(
    ("warehouse", "raw", "canonical"),
    [
        ("snowflake", "INT", "DECIMAL(38,0)"),
        ("snowflake", "NUMBER", "DECIMAL(38,0)"),
        ("snowflake", "TEXT", "VARCHAR"),
        ("bigquery", "INT64", "BIGINT"),
        ("bigquery", "NUMERIC", "DECIMAL(38,9)"),
        ("bigquery", "TIMESTAMP", "TIMESTAMP_TZ"),
        ("duckdb", "DECIMAL", "DECIMAL(18,3)"),
        ("duckdb", "VARCHAR(255)", "VARCHAR"),
        ("duckdb", "GEOMETRY", "GEOMETRY"),  # unknown types are kept as spelled
    ],
)
def test_canonical_spelling(warehouse: str, raw: str, canonical: str) -> None:
    assert normalize_type(raw, warehouse) == canonical


def test_unknown_sides_never_count_as_drift_and_bad_warehouse_is_refused() -> None:
    assert same_type(None, "VARCHAR", "duckdb") and same_type("INT", "", "snowflake")
    assert normalize_type(None, "duckdb") is None
    with pytest.raises(ValueError):
        normalize_type("INT", "oracle")


@pytest.mark.parametrize(
    ("warehouse", "raw", "temporal"),
    [
        ("duckdb", "TIMESTAMP WITH TIME ZONE", True),
        ("duckdb", "DATE", True),
        ("snowflake", "TIMESTAMP_LTZ", True),
        ("bigquery", "DATETIME", True),
        ("duckdb", "VARCHAR", False),
        ("snowflake", "NUMBER(38,0)", False),
    ],
)
def test_temporal_columns(warehouse: str, raw: str, temporal: bool) -> None:
    assert is_temporal(raw, warehouse) is temporal
