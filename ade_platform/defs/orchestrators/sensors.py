"""The failed-run sensor of each orchestrator backend.

It polls the tracked DAGs; for a failed run it has not seen, it records the failure signature matched in the
first failed task's log as an observation of the run-history asset (visible in the asset's history) and requests
a refresh of the asset.
"""

import json
from datetime import UTC, datetime, timedelta

import dagster as dg

from ade_platform.clients.orchestrators import tracked_dags
from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Tick, failure_sensor, reach
from ade_platform.defs.orchestrators.assets import asset_name, orchestrator_backend
from ade_platform.lib.orchestrators.logs import cap_log
from ade_platform.lib.orchestrators.patterns import failure_signature
from ade_platform.lib.secrets import configured_secrets

SENSOR_INTERVAL_SECONDS = 120
_SEEN_KEPT = 500


def failed_run_sensor(settings: Settings, backend: str) -> dg.SensorDefinition:
    key = dg.AssetKey(asset_name(backend))
    orchestrator = orchestrator_backend(settings, backend)

    def poll(context: dg.SensorEvaluationContext) -> Tick:
        seen: list[str] = json.loads(context.cursor) if context.cursor else []
        tracked = tracked_dags(settings, backend)
        since = datetime.now(UTC) - timedelta(days=1)
        secrets = configured_secrets(settings)
        events, new = [], []
        with reach(orchestrator) as client:
            dags = tracked if tracked is not None else [d["dag_id"] for d in client.list_dags()]
            for dag_id in dags:
                for run in client.list_runs(dag_id, since=since, limit=20):
                    if run["status"] != "failed" or f"{dag_id}:{run['run_id']}" in seen:
                        continue
                    failed = [
                        t["task_id"]
                        for t in client.list_tasks(dag_id, run["run_id"])
                        if t["status"] == "failed"
                    ]
                    log = client.task_log(dag_id, run["run_id"], failed[0]) if failed else ""
                    signature = failure_signature(cap_log(log, secrets, 200_000).text)
                    new.append(f"{dag_id}:{run['run_id']}")
                    events.append(
                        dg.AssetObservation(
                            asset_key=key,
                            metadata={
                                "dag_id": dag_id,
                                "run_id": run["run_id"],
                                "failed_tasks": json.dumps(failed),
                                "failure_signature": signature or "unknown",
                            },
                        )
                    )
                    context.log.info(
                        f"{backend} {dag_id} run {run['run_id']} failed: {signature or 'no known signature'}"
                    )
        if not new:
            return Tick(skip_reason="no new failed run")
        return Tick(
            run_requests=[dg.RunRequest(run_key=new[-1], asset_selection=[key])],
            asset_events=events,
            cursor=json.dumps((seen + new)[-_SEEN_KEPT:]),
        )

    return failure_sensor(
        f"orchestrator_failures_{backend}",
        minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        asset_selection=dg.AssetSelection.assets(key),
        description=f"Notices a new failed run of a tracked {backend} DAG, records the failure signature matched "
        "in its failed task's log, and refreshes the run-history asset.",
        poll=poll,
    )
