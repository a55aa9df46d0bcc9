"""Warehouse schema snapshots from INFORMATION_SCHEMA (DuckDB here; other backends plug in beside it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SYSTEM_SCHEMAS = {"information_schema", "pg_catalog", "main_information_schema"}


def snapshot_duckdb(path: Path, schemas: list[str] | None = None) -> dict[str, Any]:
    """Tables and columns of a DuckDB database file, read through a short-lived read-only connection."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            """
            select c.table_catalog, c.table_schema, c.table_name, t.table_type,
                   c.column_name, c.data_type, c.is_nullable, c.ordinal_position
            from information_schema.columns c
            join information_schema.tables t
              on t.table_catalog = c.table_catalog and t.table_schema = c.table_schema
             and t.table_name = c.table_name
            order by c.table_schema, c.table_name, c.ordinal_position
            """
        ).fetchall()
    finally:
        con.close()
    wanted = {s.lower() for s in schemas or []}
    tables: dict[str, dict[str, Any]] = {}
    for catalog, schema, table, table_type, column, data_type, nullable, position in rows:
        if schema.lower() in SYSTEM_SCHEMAS or (wanted and schema.lower() not in wanted):
            continue
        key = f"{schema}.{table}"
        entry = tables.setdefault(
            key,
            {
                "database": catalog,
                "schema": schema,
                "name": table,
                "table_type": "VIEW" if "VIEW" in (table_type or "").upper() else "TABLE",
                "columns": [],
            },
        )
        entry["columns"].append(
            {"name": column, "type": data_type, "nullable": nullable == "YES", "position": position}
        )
    return {"warehouse_type": "duckdb", "tables": list(tables.values()), "table_count": len(tables)}
