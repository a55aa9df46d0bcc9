"""An orchestrator's recent history as the `orchestrator_runs_<backend>` asset holds it (docs/STORE_ASSETS.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ade_platform.clients.orchestrators.base import OrchestratorClient, OrchestratorError
from ade_platform.lib.orchestrators.logs import cap_log
from ade_platform.lib.orchestrators.patterns import failure_signature

MAX_SIGNATURES_PER_DAG = 5
MAX_UNTRACKED_DAGS = 100


def snapshot_runs(
    client: OrchestratorClient,
    tracked: list[str] | None,
    since: datetime,
    *,
    previous: dict[str, Any] | None = None,
    secrets: list[str] | None = None,
) -> dict[str, Any]:
    """The `orchestrator_runs_<backend>` payload (docs/STORE_ASSETS.md): tracked DAGs' runs since `since`,
    each failed run with its failed tasks and the failure signature read from the first failed task's log.

    Signatures already in `previous` are reused, and at most MAX_SIGNATURES_PER_DAG logs are read per DAG.
    With no tracked list, every DAG is listed (untracked, up to MAX_UNTRACKED_DAGS, 10 runs each).
    """
    known: dict[str, dict[str, Any]] = {}
    for dag in (previous or {}).get("dags", []):
        for run in dag.get("runs", []):
            known[f"{dag['dag_id']}\0{run['run_id']}"] = run
    listed = {d["dag_id"]: d for d in client.list_dags()}
    if tracked is None:
        names, is_tracked = list(listed), True
    elif tracked:
        names, is_tracked = list(tracked), True
    else:
        names, is_tracked = list(listed)[:MAX_UNTRACKED_DAGS], False
    dags = []
    for dag_id in names:
        try:
            runs = client.list_runs(dag_id, since=since, limit=500 if is_tracked else 10)
        except OrchestratorError as exc:
            if exc.code != "dag_not_found":
                raise
            runs = []
        out_runs = []
        signatures_read = 0
        for run in runs:
            entry: dict[str, Any] = {**run, "failed_tasks": [], "failure_signature": None}
            if run["status"] == "failed":
                seen = known.get(f"{dag_id}\0{run['run_id']}")
                if seen is not None and seen.get("status") == "failed":
                    entry["failed_tasks"] = seen.get("failed_tasks") or []
                    entry["failure_signature"] = seen.get("failure_signature")
                elif signatures_read < MAX_SIGNATURES_PER_DAG:
                    signatures_read += 1
                    failed = [
                        t["task_id"]
                        for t in client.list_tasks(dag_id, run["run_id"])
                        if t["status"] == "failed"
                    ]
                    entry["failed_tasks"] = failed
                    if failed:
                        log = cap_log(
                            client.task_log(dag_id, run["run_id"], failed[0]), secrets or (), 200_000
                        )
                        entry["failure_signature"] = failure_signature(log.text)
            out_runs.append(entry)
        asset_keys = client.asset_keys(dag_id) if hasattr(client, "asset_keys") else []
        dags.append(
            {
                "dag_id": dag_id,
                "tracked": is_tracked,
                "description": (listed.get(dag_id) or {}).get("description"),
                "schedule": (listed.get(dag_id) or {}).get("schedule"),
                "runs": out_runs,
                "tasks": client.dag_tasks(dag_id) if out_runs or is_tracked else [],
                "asset_keys": asset_keys,
            }
        )
    return {"backend": client.backend, "since": since.isoformat(), "dags": dags}
