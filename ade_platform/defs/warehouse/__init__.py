"""warehouse: per configured warehouse, a schema snapshot (history kept in the store), the drift report,
freshness and duplicate-key checks, the refresh job, and the drift and PII sensors; for the warehouse dbt builds
into, the data profiles with their monitors, job, schedule and after-build sensor (profiles.py).

The drift report and duplicate checks need the dbt manifest, so they exist for the warehouse dbt builds
into (dbt.warehouse, or the only warehouse). The PII check is evaluated by its sensor, one evaluation
per new snapshot version, so jobs leave it out (`sensor_evaluated_checks`).
"""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from dagster import AssetCheckKey, AssetKey, AssetSelection, Definitions, define_asset_job

from ade_platform.config import Settings
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.warehouse.assets import (
    GROUP,
    drift_report_asset,
    duplicates_asset_def,
    freshness_asset_def,
    schema_snapshot_asset,
)
from ade_platform.defs.warehouse.checks import PII_CHECK, pii_check
from ade_platform.defs.warehouse.profiles import profile_definitions
from ade_platform.defs.warehouse.resources import warehouse_resources
from ade_platform.defs.warehouse.sensors import drift_sensor, pii_sensor
from ade_platform.lib.warehouse.names import check_name, drift_asset, schema_asset

__all__ = ["GROUP", "defs", "schema_asset_name", "sensor_evaluated_checks"]


def schema_asset_name(warehouse: str) -> str:
    return schema_asset(warehouse)


def dbt_warehouse(settings: Settings) -> str | None:
    """The warehouse the dbt project builds into (its manifest describes that warehouse's relations)."""
    if settings.dbt is None:
        return None
    if settings.dbt.warehouse:
        return settings.dbt.warehouse
    return next(iter(settings.warehouses)) if len(settings.warehouses) == 1 else None


def sensor_evaluated_checks(settings: Settings) -> AssetSelection:
    """The checks only sensors evaluate: subtract them from job selections."""
    keys = [AssetKey(schema_asset(name)) for name in settings.warehouses]
    return AssetSelection.checks(*[AssetCheckKey(k, PII_CHECK) for k in keys])


def defs(settings: Settings, inputs: DomainInputs) -> Definitions:
    """Per configured warehouse; the schema snapshot of the one dbt builds into comes after the dbt models."""
    upstream = list(inputs.dbt_models)
    assets: list = []
    checks: list = []
    jobs: list = []
    sensors: list = []
    schedules: list = []
    built_by_dbt = dbt_warehouse(settings)
    for name, wh in settings.warehouses.items():
        assets.append(schema_snapshot_asset(name, settings, upstream if name == built_by_dbt else []))
        checks.append(pii_check(name, settings))
        refresh = [AssetKey(schema_asset(name))]
        if name == built_by_dbt:
            assets.append(drift_report_asset(name, settings))
            assets.append(duplicates_asset_def(name, settings))
            refresh.append(AssetKey(drift_asset(name)))
            profile_assets, profile_jobs, profile_schedules, profile_sensors = profile_definitions(
                name, settings
            )
            assets += profile_assets
            jobs += profile_jobs
            schedules += profile_schedules
            sensors += profile_sensors
        if wh.freshness:
            assets.append(freshness_asset_def(name, settings))
        job = define_asset_job(
            f"warehouse_refresh_{check_name(name)}",
            selection=AssetSelection.assets(*refresh) - sensor_evaluated_checks(settings),
            description=f"Re-snapshot warehouse '{name}' and recompute its drift report (the drift sensor runs it).",
        )
        jobs.append(job)
        sensors.append(drift_sensor(name, settings, job))
        sensors.append(pii_sensor(name, settings))
    return Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=jobs,
        schedules=schedules,
        sensors=sensors,
        resources=warehouse_resources(settings),
    )
