"""Snowflake clients: the `snow` CLI (cli.py: a process per statement, the spec's transport) and
snowflake-connector-python (connector.py: one session per connection name), both implementing lib/snowflake's
SnowRunner, and what the `snowflake:` settings build around them (the guard's policy and limits, sync options,
the discovery service).

`open_client(settings, name)` opens the runner of one snow connection (`name`; None: the section's own) on the
configured transport. The connector's driver is imported by connector.py on first use, so importing this package
does not load it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ade_platform.clients.snowflake.cli import SnowCli
from ade_platform.clients.snowflake.connector import SnowConnector
from ade_platform.config import Settings
from ade_platform.lib.guard import GuardPolicy
from ade_platform.lib.snowflake.discovery import SnowflakeService
from ade_platform.lib.snowflake.errors import SnowflakeError
from ade_platform.lib.snowflake.proxy import ProxyLimits
from ade_platform.lib.snowflake.runner import SnowRunner, resolve_context
from ade_platform.lib.snowflake.sync import SyncOptions

__all__ = [
    "SnowCli",
    "SnowConnector",
    "open_client",
    "policy_from_settings",
    "proxy_limits",
    "repository_root",
    "service_from_settings",
    "sync_options",
]


def open_client(settings: Settings, name: str | None = None) -> SnowRunner:
    """The SnowRunner of snow connection `name` (None: `snowflake.connection`) on the configured transport
    (`snowflake.transport`: cli or connector), pinned to the configured context (database, schema, role,
    warehouse). SNOWFLAKE_NOT_CONFIGURED without a `snowflake:` section."""
    section = settings.snowflake
    if section is None:
        raise SnowflakeError("SNOWFLAKE_NOT_CONFIGURED", "no snowflake section is configured")
    defaults = section.defaults
    context: dict[str, Any] = {
        "connection": name if name is not None else section.connection,
        "config_file": str(section.config_file) if section.config_file else None,
        "timeout": float(section.timeout_seconds),
        "database": defaults.database,
        "schema": defaults.schema_name if defaults.database else None,
        "role": defaults.role,
        "warehouse": defaults.warehouse,
    }
    if section.transport == "connector":
        return SnowConnector(**context)
    return SnowCli(cli_path=section.cli_path, **context)


def policy_from_settings(section: Any) -> GuardPolicy:
    guard = section.guardrail
    return GuardPolicy(
        exclusion_patterns=tuple(section.exclusions.patterns),
        exclusion_regexes=tuple(section.exclusions.regexes),
        excluded_object_types=frozenset(section.exclusions.object_types),
        default_database=section.defaults.database,
        default_schema=section.defaults.schema_name,
        allow_numeric_aggregates=guard.allow_numeric_aggregates,
        allow_filtered_counts=guard.allow_filtered_counts,
        max_scalar_rows=guard.max_scalar_rows,
        allowed_table_functions=frozenset(guard.allowed_table_functions),
        allow_task_execution=guard.allow_task_execution,
    )


def proxy_limits(section: Any, max_rows: int) -> ProxyLimits:
    guard = section.guardrail
    return ProxyLimits(
        max_rows=max_rows,
        max_scalar_rows=guard.max_scalar_rows,
        max_stat_rows=guard.max_stat_rows,
        variant_sample_size=guard.variant_sample_size,
        allow_ddl_with_queries=guard.allow_ddl_with_queries,
    )


def sync_options(sync: Any, databases: Sequence[str] | None = None) -> SyncOptions:
    """SyncOptions from the `snowflake.sync` settings (include list and databases)."""
    include = {str(k).lower() for k in sync.include}
    return SyncOptions(
        include_databases="databases" in include,
        include_schemas="schemas" in include,
        include_tables="tables" in include,
        include_views="views" in include,
        include_functions="functions" in include,
        include_procedures="procedures" in include,
        include_stages="stages" in include,
        include_tasks="tasks" in include,
        databases=tuple(databases if databases is not None else sync.databases),
    )


def service_from_settings(settings: Settings, *, connection: str | None = None) -> SnowflakeService:
    """The discovery/sync service for a whole Settings object (its `snowflake` section and limits)."""
    section = settings.snowflake
    runner = resolve_context(open_client(settings, connection))
    return SnowflakeService(
        runner,
        policy_from_settings(section),
        max_rows=settings.limits.max_rows,
        max_nodes=settings.limits.max_lineage_nodes,
    )


def repository_root(settings: Settings) -> Path:
    target = settings.snowflake.sync.target_dir
    return Path(target) if target else Path(settings.home) / "snowflake" / "repository"
