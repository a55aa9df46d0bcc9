"""The Snowflake DDL repository asset, over the `snow` CLI (or the connector).

`snowflake_object_repository` writes src/{DB}/{SCHEMA}/tables|views|.../{NAME}.sql, _database.sql, _schema.sql and
.object-repository.json under snowflake.sync.target_dir, and publishes the summary (objects, hashes, view
dependencies) to the store, where the MCP guard reads it to extend exclusion checks through views.
"""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from typing import Any

from dagster import (
    AssetExecutionContext,
    DataVersion,
    MaterializeResult,
    asset,
)

from ade_platform.clients.snowflake import repository_root, service_from_settings, sync_options
from ade_platform.clients.snowflake.connector import connection_parameters
from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Polled
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.step_failure import reach_in_step
from ade_platform.lib.snowflake.errors import SnowflakeError
from ade_platform.lib.snowflake.sync import collect, read_index, write_repository
from ade_platform.store import StoreWriter

GROUP = "snowflake"
REPOSITORY_ASSET = "snowflake_object_repository"


def snowflake_address(settings: Settings) -> str:
    """The configured snow connection by name, with the host it reaches when its definition names one."""
    section = settings.snowflake
    assert section is not None
    name = f"snow connection '{section.connection or 'default'}'"
    try:
        found = connection_parameters(section.connection, section.config_file)
    except SnowflakeError:  # not defined: the connection's own error says so when it is used
        return name
    if not found.get("host"):
        return name
    port = f":{found['port']}" if found.get("port") else ""
    return f"{found.get('protocol') or 'https'}://{found['host']}{port} ({name})"


def snowflake_account(settings: Settings) -> Polled[Any]:
    """The account of the configured snow connection, as the repository asset reads it and the staleness sensor
    polls it."""
    return Polled(
        "Snowflake",
        snowflake_address(settings),
        lambda: service_from_settings(settings),
        (SnowflakeError,),
        "snowflake",
    )


def sync_repository(settings: Settings, run_id: str | None, writer: StoreWriter) -> dict[str, Any]:
    """Collect, write and publish the repository; returns the summary (plus the store version)."""
    section = settings.snowflake
    assert section is not None
    with reach_in_step(snowflake_account(settings)) as service:
        inventory = collect(service, sync_options(section.sync))
    root = repository_root(settings)
    summary = write_repository(
        root, inventory, connection=section.connection, databases=list(section.sync.databases)
    )
    index = read_index(root) or {}
    prov = writer.publish(
        REPOSITORY_ASSET,
        {**summary, **index},
        run_id=run_id,
        source={"connection": section.connection, "databases": list(section.sync.databases)},
    )
    return {**summary, "store_version": prov.version, "data_version": prov.data_version}


def repository_asset(settings: Settings) -> Any:
    @asset(
        name=REPOSITORY_ASSET,
        group_name=GROUP,
        kinds={"snowflake"},
        description="DDL repository of the Snowflake account through the snow CLI: src/{DB}/{SCHEMA}/tables|views/"
        "{NAME}.sql with _database.sql, _schema.sql and .object-repository.json (sha256 per object). Excluded "
        "objects are never written; GET_DDL falls back to INFORMATION_SCHEMA where unavailable.",
    )
    def snowflake_object_repository(
        context: AssetExecutionContext, store: StoreResource
    ) -> MaterializeResult:
        summary = sync_repository(settings, context.run.run_id, store.writer())
        return MaterializeResult(
            metadata={
                "objects": summary["synced"],
                "written": summary["written"],
                "removed": summary["removed"],
                "counts": summary["counts"],
                "notes": "; ".join(summary["notes"]) or "-",
                "store_version": summary["store_version"],
            },
            data_version=DataVersion(summary["data_version"]),
        )

    return snowflake_object_repository
