"""One way to write a schedule of the platform: running by default, in the configured time zone."""

from typing import Any

import dagster as dg

from ade_platform.config import Settings


def running_schedule(
    name: str, *, job: Any, cron: str, settings: Settings, description: str
) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name=name,
        job=job,
        cron_schedule=cron,
        execution_timezone=settings.schedules.timezone,
        description=description,
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
