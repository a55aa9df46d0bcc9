"""Warehouse schema snapshots: one shape for every backend, built from INFORMATION_SCHEMA rows.

A snapshot is plain JSON for the asset store:
    {"format", "warehouse", "warehouse_type", "fingerprint", "table_count", "column_count",
     "tables": [{"database", "schema", "name", "table_type", "columns": [
         {"name", "type", "nullable", "position", "default", "char_max_length",
          "numeric_precision", "numeric_scale"}]}]}
The fingerprint hashes (database, schema, table, column, type, nullability), so a sensor can tell whether
the warehouse changed without storing anything new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ade_platform.lib.errors import CodedError

T = TypeVar("T")

SNAPSHOT_FORMAT = 1
SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "main_information_schema"})


@dataclass(frozen=True)
class ColumnRow:
    """One row of INFORMATION_SCHEMA.COLUMNS joined with TABLES, as every backend reports it."""

    database: str | None
    schema: str
    table: str
    table_type: str | None
    column: str
    data_type: str
    nullable: bool
    position: int
    default: str | None = None
    char_max_length: int | None = None
    numeric_precision: int | None = None
    numeric_scale: int | None = None


def _table_type(raw: str | None) -> str:
    return "VIEW" if "VIEW" in (raw or "").upper() else "TABLE"


def build_snapshot(
    warehouse: str, warehouse_type: str, rows: Iterable[ColumnRow], schemas: Sequence[str] = ()
) -> dict[str, Any]:
    """Group column rows into tables (system schemas dropped, `schemas` kept when given)."""
    wanted = {s.lower() for s in schemas}
    tables: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        schema_l = row.schema.lower()
        if schema_l in SYSTEM_SCHEMAS or (wanted and schema_l not in wanted):
            continue
        key = ((row.database or "").lower(), schema_l, row.table.lower())
        entry = tables.get(key)
        if entry is None:
            entry = tables[key] = {
                "database": row.database,
                "schema": row.schema,
                "name": row.table,
                "table_type": _table_type(row.table_type),
                "columns": [],
            }
        entry["columns"].append(
            {
                "name": row.column,
                "type": row.data_type,
                "nullable": bool(row.nullable),
                "position": int(row.position),
                "default": row.default,
                "char_max_length": row.char_max_length,
                "numeric_precision": row.numeric_precision,
                "numeric_scale": row.numeric_scale,
            }
        )
    ordered = sorted(tables.values(), key=lambda t: (t["schema"].lower(), t["name"].lower()))
    for table in ordered:
        table["columns"].sort(key=lambda c: c["position"])
    return {
        "format": SNAPSHOT_FORMAT,
        "warehouse": warehouse,
        "warehouse_type": warehouse_type,
        "fingerprint": fingerprint(ordered),
        "table_count": len(ordered),
        "column_count": sum(len(t["columns"]) for t in ordered),
        "tables": ordered,
    }


def fingerprint(tables: Iterable[dict[str, Any]]) -> str:
    digest = hashlib.sha256()
    lines = sorted(
        "|".join(
            [
                (t.get("database") or "").lower(),
                t["schema"].lower(),
                t["name"].lower(),
                c["name"].lower(),
                str(c["type"]).upper(),
                "1" if c["nullable"] else "0",
            ]
        )
        for t in tables
        for c in t["columns"]
    )
    for line in lines:
        digest.update(line.encode())
        digest.update(b"\n")
    return digest.hexdigest()[:32]


def split_name(text: str) -> list[str]:
    """Split a dotted name ("db.schema.table", '"My Schema".t', `p.d.t`) into its parts."""
    parts: list[str] = []
    current: list[str] = []
    quote: str | None = None
    for ch in text.strip():
        if quote:
            if ch == quote:
                quote = None
            else:
                current.append(ch)
        elif ch in ('"', "`"):
            quote = ch
        elif ch == ".":
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    if quote:
        raise ValueError(f"unbalanced quote in {text!r}")
    parts.append("".join(current))
    if any(not p.strip() for p in parts) or not 1 <= len(parts) <= 3:
        raise ValueError(f"{text!r} is not a name of the form [database.]schema.table")
    return [p.strip() for p in parts]


def index_tables(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """table name (lower) -> the tables of that name (any schema): the lookup structure of a snapshot."""
    index: dict[str, list[dict[str, Any]]] = {}
    for table in data.get("tables", []):
        index.setdefault(table["name"].lower(), []).append(table)
    return index


def find_tables(
    index: dict[str, list[dict[str, Any]]], name: str, schema: str | None = None, database: str | None = None
) -> list[dict[str, Any]]:
    """Tables matching name (and schema, database when given), case-insensitively."""
    found = index.get(name.lower(), [])
    if schema is not None:
        found = [t for t in found if t["schema"].lower() == schema.lower()]
    if database is not None:
        found = [t for t in found if (t.get("database") or "").lower() == database.lower()]
    return found


def find_column(table: dict[str, Any], column: str) -> dict[str, Any] | None:
    lowered = column.lower()
    return next((c for c in table["columns"] if c["name"].lower() == lowered), None)


def qualified(table: dict[str, Any]) -> str:
    parts = [table.get("database"), table["schema"], table["name"]]
    return ".".join(p for p in parts if p)


class LookupFailure(CodedError):
    """A name that the snapshot cannot resolve; `code` is a toolset error code."""


def resolve_table(
    index: dict[str, list[dict[str, Any]]], parts: Sequence[str], display: str
) -> dict[str, Any]:
    """The one table that 1-3 name parts designate in a snapshot (table_not_found / ambiguous otherwise)."""
    *prefix, name = parts
    schema = prefix[-1] if prefix else None
    database = prefix[0] if len(prefix) == 2 else None
    found = find_tables(index, name, schema, database)
    return only_table(found, display, "in the latest schema snapshot", schema_dot_name)


def schema_dot_name(table: dict[str, Any]) -> str:
    return f"{table['schema']}.{table['name']}"


def only_table(
    found: Sequence[T],
    name: str,
    where: str,
    option: Callable[[T], str],
    error: type[CodedError] = LookupFailure,
) -> T:
    """The one table a name found: none is `table_not_found`, several an ambiguity the caller must qualify
    (`invalid_argument`, naming up to ten of them by `option`)."""
    if not found:
        raise error("table_not_found", f"no table {name!r} {where}")
    if len(found) > 1:
        options = ", ".join(option(t) for t in found[:10])
        raise error(
            "invalid_argument", f"table {name!r} is ambiguous ({options}); qualify it with its schema"
        )
    return found[0]


def relation_table(
    index: dict[str, list[dict[str, Any]]], schema: str, identifier: str, database: str | None = None
) -> dict[str, Any] | None:
    """The table of a dbt relation (database only breaks ties: DuckDB catalogs are file names)."""
    found = find_tables(index, identifier, schema)
    if len(found) > 1 and database:
        found = find_tables(index, identifier, schema, database) or found
    return found[0] if found else None


def column_view(column: dict[str, Any]) -> dict[str, Any]:
    """A snapshot column in the shape of INFORMATION_SCHEMA.COLUMNS (the spec's warehouse_get_schema)."""
    return {
        "column_name": column["name"],
        "ordinal_position": column["position"],
        "data_type": column["type"],
        "is_nullable": "YES" if column["nullable"] else "NO",
        "column_default": column.get("default"),
        "character_maximum_length": column.get("char_max_length"),
        "numeric_precision": column.get("numeric_precision"),
        "numeric_scale": column.get("numeric_scale"),
    }


def schema_view(
    data: dict[str, Any], schema_parts: Sequence[str], table_name: str | None, max_columns: int
) -> dict[str, Any]:
    """warehouse_get_schema's answer: one table's columns, or every table of the schema (bounded)."""
    if len(schema_parts) > 2:
        raise LookupFailure("invalid_argument", "schema_name is schema or database.schema")
    database = schema_parts[0] if len(schema_parts) == 2 else None
    schema = schema_parts[-1]
    tables = [
        t
        for t in data.get("tables", [])
        if t["schema"].lower() == schema.lower()
        and (database is None or (t.get("database") or "").lower() == database.lower())
    ]
    if not tables:
        known = sorted({t["schema"] for t in data.get("tables", [])})
        raise LookupFailure(
            "schema_not_found",
            f"no schema {'.'.join(schema_parts)!r} in the latest snapshot of warehouse '{data.get('warehouse')}'",
            f"Schemas: {', '.join(known[:50])}" if known else None,
        )
    if table_name is not None:
        match = [t for t in tables if t["name"].lower() == table_name.lower()]
        if not match:
            names = ", ".join(t["name"] for t in tables[:30])
            raise LookupFailure(
                "table_not_found", f"no table {table_name!r} in schema {schema!r}", f"Tables: {names}"
            )
        table = match[0]
        columns = [column_view(c) for c in table["columns"]]
        return {
            "database": table.get("database"),
            "schema": table["schema"],
            "table_name": table["name"],
            "table_type": table["table_type"],
            "columns": columns,
            "column_count": len(columns),
        }
    listed, total, truncated = [], 0, False
    for table in tables:
        if total + len(table["columns"]) > max_columns and listed:
            truncated = True
            break
        columns = [column_view(c) for c in table["columns"]]
        total += len(columns)
        listed.append(
            {
                "table_name": table["name"],
                "table_type": table["table_type"],
                "columns": columns,
                "column_count": len(columns),
            }
        )
    return {
        "database": tables[0].get("database"),
        "schema": tables[0]["schema"],
        "table_name": None,
        "tables": listed,
        "table_count": len(tables),
        "column_count": sum(len(t["columns"]) for t in tables),
        "truncated": truncated,
    }
