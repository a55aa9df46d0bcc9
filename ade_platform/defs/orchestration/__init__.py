"""Orchestrator run histories as assets, and a sensor that notices new failed runs.

One asset per reachable backend (`orchestrator_runs_dagster` always; `_airflow`, `_prefect` when configured):
the tracked DAGs' runs over `orchestrators.history_days`, each failed run with its failed tasks and the failure
signature matched in the first failed task's log (docs/STORE_ASSETS.md). The orchestrator tools answer run
history from it, and the cross-stack lineage reads which DAG runs which dbt command.

The sensor of each backend polls the tracked DAGs; for a failed run it has not seen, it records the matched
signature as an observation of the asset (visible in the asset's history) and requests a refresh of the asset.
"""

import json
from datetime import UTC, datetime, timedelta

import dagster as dg

from ade_platform.clients.orchestrator import (
    configured_backends,
    open_client,
    snapshot_runs,
    tracked_dags,
)
from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.lib.orchestrator.logs import cap_log
from ade_platform.lib.orchestrator.patterns import failure_signature
from ade_platform.lib.secrets import configured_secrets
from ade_platform.store import SnapshotNotFound

GROUP = "orchestration"
SENSOR_INTERVAL_SECONDS = 120
_SEEN_KEPT = 500


def asset_name(backend: str) -> str:
    return f"orchestrator_runs_{backend}"


def _runs_asset(settings: Settings, backend: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=asset_name(backend),
        group_name=GROUP,
        kinds={backend, "python"},
        description=f"Run history of the tracked {backend} DAGs/flows/jobs over the last "
        f"{settings.orchestrators.history_days} days, with failed tasks and matched failure signatures.",
    )
    def runs_asset(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        client = open_client(settings, backend)
        try:
            previous = store.reader().latest(asset_name(backend)).data
        except SnapshotNotFound:
            previous = None
        since = datetime.now(UTC) - timedelta(days=settings.orchestrators.history_days)
        data = snapshot_runs(
            client,
            tracked_dags(settings, backend),
            since,
            previous=previous,
            secrets=configured_secrets(settings),
        )
        provenance = store.writer().publish(
            asset_name(backend), data, run_id=context.run.run_id, source={"backend": backend}
        )
        runs = [r for d in data["dags"] for r in d["runs"]]
        failed = [r for r in runs if r["status"] == "failed"]
        return dg.MaterializeResult(
            metadata={
                "store_version": provenance.version,
                "dags": len(data["dags"]),
                "runs": len(runs),
                "failed_runs": len(failed),
                "signatures": json.dumps(
                    sorted({r["failure_signature"] for r in failed if r["failure_signature"]})
                ),
            }
        )

    return runs_asset


def _failure_sensor(settings: Settings, backend: str) -> dg.SensorDefinition:
    key = dg.AssetKey(asset_name(backend))

    @dg.sensor(
        name=f"orchestrator_failures_{backend}",
        minimum_interval_seconds=SENSOR_INTERVAL_SECONDS,
        asset_selection=dg.AssetSelection.assets(key),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Notices a new failed run of a tracked {backend} DAG, records the failure signature matched "
        "in its failed task's log, and refreshes the run-history asset.",
    )
    def failure_sensor(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        seen: list[str] = json.loads(context.cursor) if context.cursor else []
        client = open_client(settings, backend)
        tracked = tracked_dags(settings, backend)
        dags = tracked if tracked is not None else [d["dag_id"] for d in client.list_dags()]
        since = datetime.now(UTC) - timedelta(days=1)
        secrets = configured_secrets(settings)
        events, new = [], []
        for dag_id in dags:
            for run in client.list_runs(dag_id, since=since, limit=20):
                if run["status"] != "failed" or f"{dag_id}:{run['run_id']}" in seen:
                    continue
                failed = [
                    t["task_id"] for t in client.list_tasks(dag_id, run["run_id"]) if t["status"] == "failed"
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
            return dg.SensorResult(skip_reason="no new failed run")
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=new[-1], asset_selection=[key])],
            asset_events=events,
            cursor=json.dumps((seen + new)[-_SEEN_KEPT:]),
        )

    return failure_sensor


def build_orchestration_definitions(settings: Settings) -> dg.Definitions:
    backends = configured_backends(settings)
    return dg.Definitions(
        assets=[_runs_asset(settings, b) for b in backends],
        sensors=[_failure_sensor(settings, b) for b in backends],
    )
