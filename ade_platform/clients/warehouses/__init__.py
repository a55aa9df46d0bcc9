"""Warehouse clients: DuckDB, Snowflake and BigQuery behind one contract (`WarehouseClient`).

Drivers are imported lazily, inside the clients: importing this package costs nothing.
"""

from __future__ import annotations

from typing import Any

from ade_platform.clients.warehouses.base import (
    QueryResult,
    ResolvedTable,
    WarehouseClient,
    WarehouseError,
)

__all__ = ["QueryResult", "ResolvedTable", "WarehouseClient", "WarehouseError", "open_client"]


def open_client(name: str, warehouse: Any, timeout: float, **options: Any) -> WarehouseClient:
    """The client of one configured warehouse (a DuckDBWarehouse/SnowflakeWarehouse/BigQueryWarehouse)."""
    if warehouse.type == "duckdb":
        from ade_platform.clients.warehouses.duckdb import DuckDBClient

        options.setdefault("hold_seconds", warehouse.hold_seconds)
        return DuckDBClient(name, warehouse.path, warehouse.schemas, timeout, **options)
    if warehouse.type == "snowflake":
        from ade_platform.clients.warehouses.snowflake import SnowflakeClient

        return SnowflakeClient(name, warehouse, timeout, **options)
    if warehouse.type == "bigquery":
        from ade_platform.clients.warehouses.bigquery import BigQueryClient

        return BigQueryClient(name, warehouse, timeout, **options)
    raise ValueError(f"unknown warehouse type {warehouse.type!r}")
