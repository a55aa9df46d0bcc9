"""Sensors that find drift and new PII without anyone asking.

- The drift sensor compares the warehouse's live schema fingerprint with the latest snapshot's; when
  they differ it starts the warehouse refresh job (schema snapshot + drift report), whose drift check
  fails in the UI when a declared column was removed or retyped. A failure sensor (defs/failure_sensor.py):
  it skips, saying why, when the warehouse cannot be read.
- The PII sensor reads every new schema snapshot version in the store (its cursor is the last version
  seen) and records the PII check's evaluation on the schema asset: failed, with the columns, when a
  version brings a column that looks personal and has no `pii` tag in the manifest.
"""

from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    DefaultSensorStatus,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Tick, failure_sensor, reach, sensor_run
from ade_platform.defs.warehouse.assets import warehouse_system
from ade_platform.defs.warehouse.checks import PII_CHECK, pii_findings, pii_metadata
from ade_platform.lib.warehouse.names import check_name, schema_asset
from ade_platform.store import SnapshotNotFound, StoreReader

DRIFT_INTERVAL_SECONDS = 300
PII_INTERVAL_SECONDS = 60
_MAX_VERSIONS_PER_TICK = 20


def drift_sensor(name: str, settings: Settings, job: Any) -> Any:
    # Sensors hold no Dagster resources: the same client the resource builds, from the same settings.
    warehouse = warehouse_system(settings, name)

    def poll(context: SensorEvaluationContext) -> Tick:
        with reach(warehouse) as client:
            live = client.fingerprint()
        try:
            stored = StoreReader(settings.store_root).latest(schema_asset(name)).data.get("fingerprint")
        except SnapshotNotFound:
            stored = None
        if live == stored:
            return Tick(skip_reason=f"the schema of '{name}' is unchanged since the last snapshot")
        return Tick(
            run_requests=[
                sensor_run(f"{name}:{stored}->{live}", "warehouse schema changed", **{"ade/warehouse": name})
            ]
        )

    return failure_sensor(
        f"warehouse_drift_sensor_{check_name(name)}",
        job=job,
        minimum_interval_seconds=DRIFT_INTERVAL_SECONDS,
        description=f"Polls warehouse '{name}' for schema changes (a cheap INFORMATION_SCHEMA fingerprint) "
        "and re-snapshots it and its drift report when something changed.",
        poll=poll,
    )


def pii_sensor(name: str, settings: Settings) -> Any:
    asset_key = AssetKey(schema_asset(name))

    @sensor(
        name=f"warehouse_pii_sensor_{check_name(name)}",
        minimum_interval_seconds=PII_INTERVAL_SECONDS,
        default_status=DefaultSensorStatus.RUNNING,
        description=f"Checks every new schema snapshot of warehouse '{name}' for new columns that look like "
        "personal data and carry no `pii` tag in the dbt manifest; records the result as the "
        f"{PII_CHECK} check on the snapshot asset.",
    )
    def warehouse_pii_sensor(context: SensorEvaluationContext) -> Any:
        reader = StoreReader(settings.store_root)
        versions = reader.versions(schema_asset(name))
        if not versions:
            return SkipReason(f"warehouse '{name}' has no schema snapshot yet")
        seen = context.cursor
        fresh = [v for v in versions if seen is None or v > seen]
        if seen is None:
            fresh = fresh[-1:]  # first tick: judge the latest version against the one before it
        if not fresh:
            return SkipReason("no new schema snapshot since the last tick")
        events = []
        for version in fresh[-_MAX_VERSIONS_PER_TICK:]:
            result = pii_findings(reader, name, settings, version)
            columns = ", ".join(f"{f['table']}.{f['column']}" for f in result["findings"])
            events.append(
                AssetCheckEvaluation(
                    asset_key=asset_key,
                    check_name=PII_CHECK,
                    passed=not result["findings"],
                    severity=AssetCheckSeverity.ERROR,
                    metadata=pii_metadata(result),
                    description=f"new untagged PII: {columns}" if columns else "no new untagged PII columns",
                )
            )
        context.update_cursor(fresh[-1])
        return SensorResult(asset_events=events)

    return warehouse_pii_sensor
