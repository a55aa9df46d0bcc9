"""Warehouse clients: DuckDB, Snowflake and BigQuery behind one contract (`WarehouseClient`).

`open_client(settings, name)` opens the client of one configured warehouse. Drivers are imported lazily, inside
the clients and here (start-up speed: the gateway loads only the driver a call needs): importing this package
costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ade_platform.clients.warehouses.base import (
    QueryResult,
    ResolvedTable,
    WarehouseClient,
    WarehouseError,
)
from ade_platform.config import Settings, SnowflakeExclusionSettings
from ade_platform.lib.guard.policy import GuardPolicy
from ade_platform.lib.warehouse.pii import patterns_from

if TYPE_CHECKING:  # sql_protect imports sqlglot: loaded when a query is checked, not with this package
    from ade_platform.lib.sql_protect import ProtectRules, Source

__all__ = [
    "QueryResult",
    "ResolvedTable",
    "WarehouseClient",
    "WarehouseError",
    "exclusion_policy",
    "open_client",
    "protect_rules",
    "warehouse_client",
    "warehouse_defaults",
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


def warehouse_defaults(warehouse: Any) -> tuple[str | None, str | None]:
    """(database, schema) an unqualified name resolves to in this warehouse, where the settings say: DuckDB's
    database is its file's stem and its schema `main`; Snowflake's database is configured, its schema is the
    session's (unknown: the exclusion matcher then assumes the worst); BigQuery's project, dataset unknown."""
    if warehouse.type == "duckdb":
        return warehouse.path.stem, "main"
    if warehouse.type == "snowflake":
        return warehouse.database, None
    return getattr(warehouse, "project", None), None


def exclusion_policy(
    settings: Settings, default_database: str | None = None, default_schema: str | None = None
) -> GuardPolicy:
    """The Snowflake proxy's exclusions (`snowflake.exclusions`; their defaults without a snowflake section, as
    `ade guard` applies them), placed in a warehouse's default database and schema."""
    exclusions = settings.snowflake.exclusions if settings.snowflake else SnowflakeExclusionSettings()
    return GuardPolicy(
        exclusion_patterns=tuple(exclusions.patterns),
        exclusion_regexes=tuple(exclusions.regexes),
        default_database=default_database,
        default_schema=default_schema,
    )


def protect_rules(settings: Settings, name: str, tagged: frozenset[Source] = frozenset()) -> ProtectRules:
    """What protects the rows of warehouse `name`: the exclusions, the PII patterns (`pii:` settings first),
    the columns dbt tags as personal data."""
    from ade_platform.lib.sql_protect import ProtectRules

    database, schema = warehouse_defaults(settings.warehouse(name))
    return ProtectRules(
        exclusion_policy(settings, database, schema),
        patterns_from(settings.pii.patterns, settings.pii.ignore),
        tagged,
    )
