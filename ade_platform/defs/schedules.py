"""The platform's refresh jobs and their schedules, named and described in one place (what an operator reads in
the Dagster UI), and the one way a domain builds them: the asset job and, when a cron is set, its schedule,
running by default in the configured time zone."""

from typing import Any, NamedTuple

import dagster as dg

from ade_platform.config import Settings


class RefreshText(NamedTuple):
    schedule: str
    description: str
    schedule_description: str


REFRESH_JOBS = {
    "refresh_metadata": RefreshText(
        "metadata_refresh_schedule",
        "Re-snapshot dbt artifacts and warehouse schemas.",
        "Keeps the store's dbt artifact and schema snapshots fresh for the MCP tools.",
    ),
    "refresh_bi": RefreshText(
        "bi_refresh_schedule",
        "Re-inventory the BI dashboards and check their health.",
        "Keeps the BI inventory and health snapshots fresh for the bi-api tools.",
    ),
    # The dbt Cloud tools check for anything newer before they answer from these snapshots; the schedule keeps
    # them close enough that they usually can, and `ade status` shows when it did not run.
    "refresh_dbt_cloud": RefreshText(
        "dbt_cloud_refresh_schedule",
        "Re-snapshot dbt Cloud jobs, runs, freshness and artifacts.",
        "Keeps the dbt Cloud jobs, runs, freshness and artifacts snapshots fresh for the dbt-cloud tools.",
    ),
    "snowflake_sync": RefreshText(
        "snowflake_sync_schedule",
        "Re-sync the Snowflake DDL repository.",
        "Keeps the Snowflake DDL repository (and the guard's view dependencies) fresh.",
    ),
    "profile_warehouse": RefreshText(
        "profile_schedule",
        "Profile the dbt warehouse's relations and run the monitors on them.",
        "Gives the monitors their daily profile of every relation (they learn their thresholds from it); "
        "builds are profiled by the after-build sensor.",
    ),
    "generate_datasets": RefreshText(
        "datasets_schedule",
        "Regenerate the Snowfakery datasets.",
        "Regenerates the Snowfakery datasets (chained recipes grow at each run).",
    ),
}


def refresh_job(settings: Settings, name: str, selection: Any, cron: str | None) -> tuple[Any, list[Any]]:
    """The job `name` (one of REFRESH_JOBS) over `selection`, and its schedule on `cron` (none without a cron)."""
    text = REFRESH_JOBS[name]
    job = dg.define_asset_job(name, selection=selection, description=text.description)
    if not cron:
        return job, []
    schedule = dg.ScheduleDefinition(
        name=text.schedule,
        job=job,
        cron_schedule=cron,
        execution_timezone=settings.schedules.timezone,
        description=text.schedule_description,
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
    return job, [schedule]
