"""snowflake: the synced DDL repository (scheduled) and a staleness sensor, over the `snow` CLI.

- `snowflake_object_repository` writes src/{DB}/{SCHEMA}/tables|views|.../{NAME}.sql, _database.sql,
  _schema.sql and .object-repository.json under snowflake.sync.target_dir, and publishes the summary
  (objects, hashes, view dependencies) to the store, where the MCP guard reads it to extend exclusion
  checks through views.
- `snowflake_staleness_sensor` re-collects the DDL, publishes `snowflake_staleness` (changed, dropped and
  new objects) to the store, and requests a re-sync when anything changed.
"""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import hashlib
import json
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    MaterializeResult,
    RunRequest,
    ScheduleDefinition,
    SensorEvaluationContext,
    SkipReason,
    asset,
    define_asset_job,
    sensor,
)

from ade_platform.clients.snowflake import repository_root, service_from_settings, sync_options
from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.lib.snowflake.errors import SnowflakeError
from ade_platform.lib.snowflake.sync import collect, read_index, staleness, write_repository
from ade_platform.store import StoreWriter

GROUP = "snowflake"
REPOSITORY_ASSET = "snowflake_object_repository"
STALENESS_ASSET = "snowflake_staleness"
SYNC_JOB = "snowflake_sync"


def sync_repository(settings: Settings, run_id: str | None, writer: StoreWriter) -> dict[str, Any]:
    """Collect, write and publish the repository; returns the summary (plus the store version)."""
    section = settings.snowflake
    assert section is not None
    service = service_from_settings(settings)
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
        summary = sync_repository(settings, context.run_id, store.writer())
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


def staleness_report(settings: Settings) -> dict[str, Any] | None:
    """Fresh DDL compared with the repository index; None when nothing was synced yet."""
    section = settings.snowflake
    assert section is not None
    index = read_index(repository_root(settings))
    if not index:
        return None
    service = service_from_settings(settings)
    inventory = collect(service, sync_options(section.sync))
    return staleness(index, inventory.objects)


def staleness_sensor(settings: Settings, job: Any) -> Any:
    section = settings.snowflake
    assert section is not None

    @sensor(
        name="snowflake_staleness_sensor",
        job=job,
        minimum_interval_seconds=section.sync.staleness_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Compares the current DDL of every synced Snowflake object with the repository's hashes; "
        "publishes snowflake_staleness (changed, dropped, new objects) and re-syncs when something changed.",
    )
    def snowflake_staleness_sensor(context: SensorEvaluationContext) -> Any:
        try:
            report = staleness_report(settings)
        except SnowflakeError as exc:
            return SkipReason(f"Snowflake not readable now ({exc.code}): {exc.detail}")
        if report is None:
            return SkipReason("the DDL repository has not been synced yet")
        StoreWriter(settings.store_root, retention=settings.store.retention).publish(
            STALENESS_ASSET, report, source={"sensor": "snowflake_staleness_sensor"}
        )
        if not report["is_stale"]:
            return SkipReason("no synced Snowflake object changed")
        changed = sorted(o["objectName"] for o in report["stale"] + report["dropped"] + report["new"])
        digest = hashlib.sha256(json.dumps(changed).encode()).hexdigest()[:16]
        return RunRequest(
            run_key=f"stale:{digest}",
            tags={
                "ade/source": "sensor",
                "ade/reason": "Snowflake DDL changed",
                "ade/stale_objects": ", ".join(changed)[:1000],
            },
        )

    return snowflake_staleness_sensor


def build_snowflake_definitions(settings: Settings) -> Definitions:
    """Empty when no snowflake section is configured."""
    if settings.snowflake is None:
        return Definitions()
    job = define_asset_job(
        SYNC_JOB, selection=[AssetKey(REPOSITORY_ASSET)], description="Re-sync the Snowflake DDL repository."
    )
    schedules = []
    if settings.snowflake.sync.schedule_cron:
        schedules.append(
            ScheduleDefinition(
                name="snowflake_sync_schedule",
                job=job,
                cron_schedule=settings.snowflake.sync.schedule_cron,
                execution_timezone=settings.schedules.timezone,
                description="Keeps the Snowflake DDL repository (and the guard's view dependencies) fresh.",
                default_status=DefaultScheduleStatus.RUNNING,
            )
        )
    return Definitions(
        assets=[repository_asset(settings)],
        jobs=[job],
        schedules=schedules,
        sensors=[staleness_sensor(settings, job)],
    )
