"""snowflake: the synced DDL repository (a job, scheduled when `snowflake.sync.schedule_cron` is set) and a
staleness sensor that re-syncs it when the account's DDL changed. Empty without a `snowflake:` section."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.schedules import refresh_job
from ade_platform.defs.snowflake.assets import GROUP, REPOSITORY_ASSET, repository_asset
from ade_platform.defs.snowflake.sensors import STALENESS_ASSET, staleness_sensor

__all__ = ["GROUP", "REPOSITORY_ASSET", "STALENESS_ASSET", "SYNC_JOB", "defs"]

SYNC_JOB = "snowflake_sync"


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    if settings.snowflake is None:
        return dg.Definitions()
    job, schedules = refresh_job(
        settings, SYNC_JOB, [dg.AssetKey(REPOSITORY_ASSET)], settings.snowflake.sync.schedule_cron
    )
    return dg.Definitions(
        assets=[repository_asset(settings)],
        jobs=[job],
        schedules=schedules,
        sensors=[staleness_sensor(settings, job)],
    )
