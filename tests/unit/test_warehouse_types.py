"""Warehouse-aware type normalization, table-driven: the same type spelled many ways compares equal."""

from __future__ import annotations

import pytest

from ade_platform.lib.warehouse.types import is_temporal, normalize_type, same_type

# (warehouse, declared, observed, whether they are the same type)
TYPE_PAIRS = [
    # the same type spelled many ways
    ("snowflake", "TEXT", "VARCHAR", True),
    ("snowflake", "STRING", "VARCHAR(16777216)", True),
    ("snowflake", "varchar(20)", "TEXT", True),
    ("snowflake", "INT", "NUMBER(38,0)", True),
    ("snowflake", "integer", "NUMBER(38, 0)", True),
    ("snowflake", "BIGINT", "NUMBER", True),
    ("snowflake", "NUMBER", "NUMBER(10,2)", True),  # a catalog's bare NUMBER matches any precision
    ("snowflake", "DECIMAL(10,2)", "NUMBER(10,2)", True),
    ("snowflake", "FLOAT", "DOUBLE", True),
    ("snowflake", "REAL", "FLOAT8", True),
    ("snowflake", "DATETIME", "TIMESTAMP_NTZ", True),
    ("snowflake", "TIMESTAMP_NTZ(9)", "TIMESTAMP", True),
    ("snowflake", "TIMESTAMPTZ", "TIMESTAMP_TZ", True),
    ("snowflake", "BOOL", "BOOLEAN", True),
    ("snowflake", "VARBINARY", "BINARY(8388608)", True),
    ("bigquery", "INT64", "BIGINT", True),
    ("bigquery", "INTEGER", "INT64", True),
    ("bigquery", "STRING", "VARCHAR", True),
    ("bigquery", "STRING(10)", "STRING", True),
    ("bigquery", "FLOAT64", "FLOAT", True),
    ("bigquery", "BOOL", "BOOLEAN", True),
    ("bigquery", "NUMERIC", "NUMERIC(38, 9)", True),
    ("bigquery", "BIGNUMERIC", "BIGDECIMAL", True),
    ("bigquery", "DATETIME", "datetime", True),
    ("bigquery", "BYTES", "BINARY", True),
    ("bigquery", "RECORD", "STRUCT<a INT64>", True),
    ("bigquery", "ARRAY<STRING>", "ARRAY<INT64>", True),
    ("duckdb", "TEXT", "VARCHAR", True),
    ("duckdb", "STRING", "VARCHAR", True),
    ("duckdb", "INT", "INTEGER", True),
    ("duckdb", "INT4", "INTEGER", True),
    ("duckdb", "INT8", "BIGINT", True),
    ("duckdb", "LONG", "BIGINT", True),
    ("duckdb", "FLOAT8", "DOUBLE", True),
    ("duckdb", "REAL", "FLOAT", True),
    ("duckdb", "DATETIME", "TIMESTAMP", True),
    ("duckdb", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", True),
    ("duckdb", "NUMERIC(10,2)", "DECIMAL(10,2)", True),
    ("duckdb", "BLOB", "BYTEA", True),
    ("duckdb", "INTEGER[]", "BIGINT[]", True),
    ("duckdb", "STRUCT(a INTEGER)", "STRUCT(b VARCHAR)", True),
    ("duckdb", "  double   precision ", "DOUBLE", True),
    # real changes
    ("snowflake", "NUMBER(38,0)", "FLOAT", False),
    ("snowflake", "NUMBER(38,0)", "NUMBER(10,2)", False),
    ("snowflake", "INT", "NUMBER(10,2)", False),
    ("snowflake", "TIMESTAMP_NTZ", "TIMESTAMP_TZ", False),
    ("snowflake", "VARCHAR", "VARIANT", False),
    ("snowflake", "DATE", "TIMESTAMP", False),
    ("bigquery", "DATETIME", "TIMESTAMP", False),  # wall clock vs instant
    ("bigquery", "INT64", "FLOAT64", False),
    ("bigquery", "NUMERIC", "BIGNUMERIC", False),
    ("duckdb", "INTEGER", "BIGINT", False),  # DuckDB integers have sizes; widening is a change
    ("duckdb", "FLOAT", "DOUBLE", False),
    ("duckdb", "DOUBLE", "VARCHAR", False),
    ("duckdb", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", False),
    ("duckdb", "DECIMAL(10,2)", "DECIMAL(18,3)", False),
    ("duckdb", "DATE", "VARCHAR", False),
]


@pytest.mark.parametrize(("warehouse", "declared", "observed", "same"), TYPE_PAIRS)
def test_aliases_compare_equal_and_real_changes_different(
    warehouse: str, declared: str, observed: str, same: bool
) -> None:
    assert same_type(declared, observed, warehouse) is same, (
        normalize_type(declared, warehouse),
        normalize_type(observed, warehouse),
    )


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
