"""Warehouse-aware type normalization, so drift compares meaning, not spelling.

Each warehouse spells the same type many ways (Snowflake: TEXT = VARCHAR = STRING, INT = NUMBER(38,0);
BigQuery: INT64 = INTEGER = BIGINT; DuckDB: INT = INT4 = INTEGER). `normalize_type` maps a declared or
observed type to one canonical spelling per warehouse; two types are the same when their canonical
forms are equal. String and binary lengths are ignored (Snowflake reports TEXT as VARCHAR(16777216));
decimal precision and scale are kept (NUMBER(38,0) is not NUMBER(10,2)).
"""

from __future__ import annotations

import re

WAREHOUSE_TYPES = ("duckdb", "snowflake", "bigquery")

_STRING = {
    "VARCHAR", "TEXT", "STRING", "CHAR", "CHARACTER", "NCHAR", "NVARCHAR", "NVARCHAR2", "BPCHAR",
    "CHARACTER VARYING", "CHAR VARYING", "NCHAR VARYING", "NATIONAL CHARACTER VARYING",
}  # fmt: skip
_BINARY = {"BINARY", "VARBINARY", "BLOB", "BYTEA", "BYTES"}
_BOOLEAN = {"BOOLEAN", "BOOL", "LOGICAL"}
_DECIMAL = {"DECIMAL", "NUMERIC", "NUMBER", "DEC"}

# Per warehouse: spelling -> canonical. Anything not listed is kept as spelled (upper-cased).
_ALIASES: dict[str, dict[str, str]] = {
    "snowflake": {
        **{name: "DECIMAL(38,0)" for name in ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "BYTEINT")},
        **{name: "DOUBLE" for name in ("FLOAT", "FLOAT4", "FLOAT8", "DOUBLE", "DOUBLE PRECISION", "REAL")},
        **{name: "TIMESTAMP" for name in ("TIMESTAMP", "DATETIME", "TIMESTAMP_NTZ", "TIMESTAMPNTZ")},
        "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
        **{
            name: "TIMESTAMP_LTZ"
            for name in ("TIMESTAMP_LTZ", "TIMESTAMPLTZ", "TIMESTAMP WITH LOCAL TIME ZONE")
        },
        **{name: "TIMESTAMP_TZ" for name in ("TIMESTAMP_TZ", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")},
    },
    "duckdb": {
        **{name: "TINYINT" for name in ("TINYINT", "INT1")},
        **{name: "SMALLINT" for name in ("SMALLINT", "INT2", "SHORT")},
        **{name: "INTEGER" for name in ("INTEGER", "INT", "INT4", "SIGNED")},
        **{name: "BIGINT" for name in ("BIGINT", "INT8", "LONG")},
        **{name: "HUGEINT" for name in ("HUGEINT", "INT128")},
        **{name: "FLOAT" for name in ("FLOAT", "FLOAT4", "REAL")},
        **{name: "DOUBLE" for name in ("DOUBLE", "FLOAT8", "DOUBLE PRECISION")},
        **{
            name: "TIMESTAMP"
            for name in (
                "TIMESTAMP",
                "DATETIME",
                "TIMESTAMP_US",
                "TIMESTAMP_MS",
                "TIMESTAMP_NS",
                "TIMESTAMP_S",
            )
        },
        "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
        **{name: "TIMESTAMP_TZ" for name in ("TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE")},
    },
    "bigquery": {
        **{
            name: "BIGINT" for name in ("INT64", "INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "BYTEINT")
        },
        **{name: "DOUBLE" for name in ("FLOAT64", "FLOAT")},
        # BigQuery DATETIME is a wall-clock time; TIMESTAMP is an absolute instant.
        "DATETIME": "TIMESTAMP",
        "TIMESTAMP": "TIMESTAMP_TZ",
        "BIGNUMERIC": "DECIMAL",
        "BIGDECIMAL": "DECIMAL",
        "RECORD": "STRUCT",
    },
}
# Precision and scale of a decimal spelled without them.
_DECIMAL_DEFAULTS = {
    "snowflake": (38, 0),
    "duckdb": (18, 3),
    "bigquery": (38, 9),
}
_BIGQUERY_BIGNUMERIC_DEFAULT = (76, 38)
_SHAPE = re.compile(
    r"^(?P<base>[A-Z][A-Z0-9_ ]*?)\s*(?:\((?P<params>[^)]*)\))?\s*"
    r"(?P<tz>WITH(?:OUT)?(?: LOCAL)? TIME ZONE)?$"
)


def _nested(text: str) -> str | None:
    if text.endswith("[]") or text.startswith(("ARRAY<", "ARRAY(", "LIST(", "LIST<")):
        return "ARRAY"
    if text.startswith(("STRUCT<", "STRUCT(", "RECORD<", "ROW(")):
        return "STRUCT"
    if text.startswith(("MAP<", "MAP(")):
        return "MAP"
    return None


def _canonical(raw: str | None, warehouse: str) -> tuple[str | None, bool]:
    """(canonical spelling, whether a decimal's precision/scale were given or implied by the alias)."""
    if raw is None or not str(raw).strip():
        return None, False
    if warehouse not in WAREHOUSE_TYPES:
        raise ValueError(f"unknown warehouse type {warehouse!r}")
    text = " ".join(str(raw).strip().upper().split())
    nested = _nested(text)
    if nested:
        return nested, True
    match = _SHAPE.match(text)
    if not match:
        return text, True
    base = match["base"].strip()
    params = [p.strip() for p in (match["params"] or "").split(",") if p.strip()]
    if match["tz"]:
        base = f"{base} {match['tz']}"
    if base in _STRING:
        return "VARCHAR", True
    if base in _BINARY:
        return "BINARY", True
    if base in _BOOLEAN:
        return "BOOLEAN", True
    canonical = _ALIASES[warehouse].get(base, base)
    if canonical in _DECIMAL or canonical == "DECIMAL":
        default = _DECIMAL_DEFAULTS[warehouse]
        if warehouse == "bigquery" and base in ("BIGNUMERIC", "BIGDECIMAL"):
            default = _BIGQUERY_BIGNUMERIC_DEFAULT
        precision = int(params[0]) if params and params[0].isdigit() else default[0]
        scale = int(params[1]) if len(params) > 1 and params[1].isdigit() else (0 if params else default[1])
        return f"DECIMAL({precision},{scale})", bool(params)
    return canonical, True


def normalize_type(raw: str | None, warehouse: str) -> str | None:
    """The canonical spelling of a type in the given warehouse ('duckdb', 'snowflake', 'bigquery')."""
    return _canonical(raw, warehouse)[0]


def same_type(declared: str | None, observed: str | None, warehouse: str) -> bool:
    """True when the two spellings mean the same type in this warehouse (an unknown side = same).

    A decimal spelled without precision/scale (catalogs often report plain NUMBER) matches any decimal:
    only when both sides state them (or an alias implies them, INT = NUMBER(38,0)) must they agree.
    """
    if not declared or not observed:
        return True
    left, left_explicit = _canonical(declared, warehouse)
    right, right_explicit = _canonical(observed, warehouse)
    if left == right:
        return True
    if left and right and left.startswith("DECIMAL(") and right.startswith("DECIMAL("):
        # Tolerant only within a family: BigQuery's BIGNUMERIC (precision > 38) is not NUMERIC.
        return not (left_explicit and right_explicit) and _wide(left) == _wide(right)
    return False


def _wide(decimal: str) -> bool:
    return int(decimal[len("DECIMAL(") :].split(",")[0]) > 38


def is_temporal(raw: str | None, warehouse: str) -> bool:
    """DATE, DATETIME, TIMESTAMP of any flavour: what a freshness column must be."""
    canonical = normalize_type(raw, warehouse) or ""
    return canonical == "DATE" or canonical.startswith("TIMESTAMP")
