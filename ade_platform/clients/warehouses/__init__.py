"""Warehouse clients: DuckDB, Snowflake and BigQuery behind one contract (`WarehouseClient`).

`open_client(settings, name)` opens the client of one configured warehouse. Drivers are imported lazily, inside
the clients and here (start-up speed: the gateway loads only the driver a call needs): importing this package
costs nothing.
"""

from __future__ import annotations

from typing import Any

from ade_platform.clients.warehouses.base import (
    QueryResult,
    ResolvedTable,
    WarehouseClient,
    WarehouseError,
)
from ade_platform.config import Settings

__all__ = [
    "QueryResult",
    "ResolvedTable",
    "WarehouseClient",
    "WarehouseError",
    "open_client",
    "warehouse_client",
]


def open_client(settings: Settings, name: str, **options: Any) -> WarehouseClient:
    """The client of warehouse `name` (a key of `warehouses:`), with the configured query timeout; `options` go
    to the client (a DuckDB lock_retry, a Snowflake connection_factory)."""
    return warehouse_client(name, settings.warehouse(name), settings.limits.query_timeout_seconds, **options)


def warehouse_client(name: str, warehouse: Any, timeout: float, **options: Any) -> WarehouseClient:
    """The client of one warehouse model (a DuckDBWarehouse/SnowflakeWarehouse/BigQueryWarehouse), for a caller
    that holds the model rather than settings (benchmarks, tests)."""
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
