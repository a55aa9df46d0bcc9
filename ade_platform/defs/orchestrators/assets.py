"""Orchestrator run histories as assets.

One asset per reachable backend (`orchestrator_runs_dagster` always; `_airflow`, `_prefect` when configured):
the tracked DAGs' runs over `orchestrators.history_days`, each failed run with its failed tasks and the failure
signature matched in the first failed task's log (docs/STORE_ASSETS.md). The orchestrator tools answer run
history from it, and the cross-stack lineage reads which DAG runs which dbt command.
"""

import json
from datetime import UTC, datetime, timedelta

import dagster as dg

from ade_platform.clients.orchestrators import open_client, snapshot_runs, tracked_dags
from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.lib.secrets import configured_secrets
from ade_platform.store import SnapshotNotFound

GROUP = "orchestration"


def asset_name(backend: str) -> str:
    return f"orchestrator_runs_{backend}"


def run_history_asset(settings: Settings, backend: str) -> dg.AssetsDefinition:
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
