"""The dbt Cloud failed-run sensor: a new failed run of a tracked job re-snapshots the dbt Cloud assets."""

from typing import Any

from dagster import RunRequest, SensorEvaluationContext

from ade_platform.config import DbtCloudSettings
from ade_platform.defs.dbt_cloud.assets import dbt_cloud_account
from ade_platform.defs.failure_sensor import Tick, failure_sensor, reach
from ade_platform.lib import dbt_cloud as lib


def failed_run_sensor(section: DbtCloudSettings, job: Any) -> Any:
    dbt_cloud = dbt_cloud_account(section)

    def poll(context: SensorEvaluationContext) -> Tick:
        last_seen = int(context.cursor or 0)
        failed: list[dict[str, Any]] = []
        with reach(dbt_cloud) as client:
            for job_id in section.tracked_jobs:
                failed += client.list_runs(job_id, lib.STATUS_FILTERS["error"], limit=10)
        new = sorted((r for r in failed if int(r["id"]) > last_seen), key=lambda r: r["id"])
        if not new:
            return Tick(skip_reason="no new failed run of a tracked dbt Cloud job")
        newest = new[-1]
        context.log.warning(
            "new failed dbt Cloud run(s): "
            + ", ".join(
                f"{r['id']} (job {r.get('job_definition_id')}: {r.get('status_message')})" for r in new
            )
        )
        return Tick(
            run_requests=[
                RunRequest(
                    run_key=f"dbt_cloud_failed_run_{newest['id']}",
                    tags={"ade/dbt_cloud_failed_run": str(newest["id"])},
                )
            ],
            cursor=str(newest["id"]),
        )

    return failure_sensor(
        "dbt_cloud_failed_run_sensor",
        job=job,
        minimum_interval_seconds=section.sensor_interval_seconds,
        description="Notices a new failed run of a tracked dbt Cloud job and re-snapshots the dbt Cloud assets "
        "(runs, freshness, artifacts), so the tools see the failure.",
        poll=poll,
    )
