"""One way to write a domain's refresh: an asset job and, when a cron is set, its schedule, running by default in
the configured time zone."""

from typing import Any

import dagster as dg

from ade_platform.config import Settings


def refresh_job(
    name: str,
    *,
    selection: Any,
    description: str,
    settings: Settings,
    cron: str | None,
    schedule: str,
    schedule_description: str,
) -> tuple[Any, list[dg.ScheduleDefinition]]:
    """The job `name` over `selection`, and the schedule `schedule` that runs it on `cron` (none without one)."""
    job = dg.define_asset_job(name, selection=selection, description=description)
    if not cron:
        return job, []
    running = dg.ScheduleDefinition(
        name=schedule,
        job=job,
        cron_schedule=cron,
        execution_timezone=settings.schedules.timezone,
        description=schedule_description,
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
    return job, [running]
