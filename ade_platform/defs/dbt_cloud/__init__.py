"""dbt_cloud: the job inventory, the recent runs and source freshness of tracked jobs, and (when a tracked job is
the dbt tools' source) its run artifacts in the dbt slots of the store; a job that refreshes them and a sensor
that runs it when a tracked job fails, and its schedule (schedules.metadata_cron). Empty without a `dbt_cloud:` section in ade.yaml."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.dbt_cloud.assets import (
    ARTIFACTS_ASSET,
    FRESHNESS_ASSET,
    GROUP,
    JOBS_ASSET,
    RUNS_ASSET,
    dbt_cloud_assets,
)
from ade_platform.defs.dbt_cloud.sensors import failed_run_sensor
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.schedules import refresh_job

__all__ = ["ARTIFACTS_ASSET", "FRESHNESS_ASSET", "GROUP", "JOBS_ASSET", "REFRESH_JOB", "RUNS_ASSET", "defs"]

REFRESH_JOB = "refresh_dbt_cloud"


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    if settings.dbt_cloud is None:
        return dg.Definitions()
    refresh, schedules = refresh_job(
        settings, REFRESH_JOB, dg.AssetSelection.groups(GROUP), settings.schedules.metadata_cron
    )
    return dg.Definitions(
        assets=dbt_cloud_assets(settings),
        jobs=[refresh],
        schedules=schedules,
        sensors=[failed_run_sensor(settings.dbt_cloud, refresh)],
    )
