"""Orchestrator run histories as assets.

One asset per reachable backend (`orchestrator_runs_dagster` always; `_airflow`, `_prefect` when configured):
the tracked DAGs' runs over `orchestrators.history_days`, each failed run with its failed tasks and the failure
signature matched in the first failed task's log (docs/STORE_ASSETS.md). The orchestrator tools answer run
history from it, and the cross-stack lineage reads which DAG runs which dbt command.
"""

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import dagster as dg

from ade_platform.clients.orchestrators import OrchestratorError, open_client, snapshot_runs, tracked_dags
from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Polled
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.step_failure import reach_in_step
from ade_platform.lib.secrets import configured_secrets
from ade_platform.store import SnapshotNotFound

GROUP = "orchestration"


def asset_name(backend: str) -> str:
    return f"orchestrator_runs_{backend}"


def backend_address(settings: Settings, backend: str) -> str:
    """Where a backend is reached: its API URL, or the folder of the platform's own instance for Dagster."""
    conf = settings.orchestrators
    if backend == "airflow" and conf.airflow is not None:
        return conf.airflow.base_url
    if backend == "prefect" and conf.prefect is not None:
        return conf.prefect.api_url
    return str(settings.dagster_home)


def orchestrator_backend(settings: Settings, backend: str) -> Polled[Any]:
    """A backend, as its run-history asset reads it and its failed-run sensor polls it."""
    section = "orchestrators" if backend == "dagster" else f"orchestrators.{backend}"
    return Polled(
        backend.capitalize(),
        backend_address(settings, backend),
        lambda: open_client(settings, backend),
        (OrchestratorError,),
        section,
    )


def run_history_asset(settings: Settings, backend: str) -> dg.AssetsDefinition:
    @dg.asset(
        name=asset_name(backend),
        group_name=GROUP,
        kinds={backend, "python"},
        description=f"Run history of the tracked {backend} DAGs/flows/jobs over the last "
        f"{settings.orchestrators.history_days} days, with failed tasks and matched failure signatures.",
    )
    def runs_asset(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        try:
            previous = store.reader().latest(asset_name(backend)).data
        except SnapshotNotFound:
            previous = None
        since = datetime.now(UTC) - timedelta(days=settings.orchestrators.history_days)
        with reach_in_step(orchestrator_backend(settings, backend)) as client:
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
