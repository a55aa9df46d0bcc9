"""What the orchestrator tools do: live reads of a backend (audited, except on the platform's own Dagster), the
tracked DAGs' history from the `orchestrator_runs_<backend>` snapshot, and the checked, audited trigger."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from ade_platform.clients.orchestrators import (
    OrchestratorClient,
    OrchestratorError,
    conf_schema,
    triggerable_dags,
)
from ade_platform.config import Settings
from ade_platform.lib.orchestrators.logs import cap_log
from ade_platform.lib.orchestrators.patterns import SIGNATURES, detect_patterns, detect_signatures
from ade_platform.lib.orchestrators.runs import (
    RunRecord,
    Status,
    matches_status,
    normalize_status,
    summarize,
)
from ade_platform.lib.orchestrators.trigger_policy import check_conf, check_conf_schema, trigger_allowed
from ade_platform.store import Snapshot
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.schemas import orchestrators as shapes
from mcp_bridge.toolsets.schemas.provenance import Provenance

T = TypeVar("T")
RUN_SCAN_LIMIT = 500


class OrchestratorService:
    """The configured backends (clients opened by the bridge on first use) and the audited way to call them."""

    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.settings = ctx.settings
        self.conf = ctx.settings.orchestrators

    def client(self, backend: str) -> OrchestratorClient:
        return self.ctx.client("orchestrator", backend)

    def live_read(self, tool: str, arguments: dict[str, Any], fn: Callable[[], T]) -> tuple[T, Provenance]:
        if arguments["backend"] == "dagster":
            # Reading the platform's own run history: no audit run, or every look would add one to it.
            started = time.perf_counter()
            value = fn()
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            return value, {"source": "live", "run_id": None, "elapsed_ms": elapsed}
        self.client(arguments["backend"])  # an unconfigured backend fails here, before any audit run starts
        value, stamp = self.ctx.live_call(tool, fn, arguments=arguments, effects="none")
        return value, stamp  # type: ignore[return-value]

    def last_run(self, dag_id: str, backend: str, status: str) -> shapes.LastRun:
        latest = status.strip().lower() == "any"
        if not latest:
            status_filter(status)  # an unknown state is refused before any call

        def run() -> RunRecord | None:
            for record in self.client(backend).list_runs(dag_id, limit=RUN_SCAN_LIMIT):
                if matches_status(record, status):
                    return record
            return None

        record, stamp = self.live_read(
            "orchestrator_get_last_run", {"dag_id": dag_id, "status": status, "backend": backend}, run
        )
        if record is None:
            raise ToolFailure(
                "no_matching_run",
                f"no run of {dag_id!r} on {backend} in state {status!r} among its newest {RUN_SCAN_LIMIT}",
                dag_id=dag_id,
                status_filter=status,
                backend=backend,
            )
        return self.ctx.observed(
            "orchestrator_get_last_run",
            {"dag_id": dag_id, **record, "backend": backend, "provenance": stamp},
            backend=backend,
            latest=latest,
        )  # type: ignore[return-value]

    def trigger(self, dag_id: str, backend: str, conf: dict[str, Any] | None) -> shapes.Triggered:
        arguments = {"dag_id": dag_id, "backend": backend, "conf": conf}
        if backend != "dagster":
            self.client(backend)  # an unconfigured backend fails here (opening a client sends no request)
        check_trigger(self.settings, backend, dag_id, conf)
        record, stamp = self.ctx.live_call(
            "orchestrator_trigger_dag",
            lambda: self.client(backend).trigger(dag_id, conf),
            arguments=arguments,
            cause=_reason(conf),
            effects="external",
        )
        return {
            "dag_id": dag_id,
            "run_id": record["run_id"],
            "state": record["state"],
            "execution_date": record["execution_date"],
            "conf": conf,
            "backend": backend,
            "provenance": stamp,  # type: ignore[typeddict-item]
        }

    def task_status(self, dag_id: str, run_id: str, task_id: str, backend: str) -> shapes.TaskStatus:
        task, stamp = self.live_read(
            "orchestrator_get_task_status",
            {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "backend": backend},
            lambda: self.client(backend).task_status(dag_id, run_id, task_id),
        )
        # task_id echoes the request on every backend (Prefect names a task run `<task>-<suffix>`)
        body = {"dag_id": dag_id, "run_id": run_id, **task, "task_id": task_id, "backend": backend}
        return {**body, "provenance": stamp}  # type: ignore[typeddict-item]

    def fetch_logs(self, dag_id: str, run_id: str, task_id: str, backend: str) -> shapes.Logs:
        capped, stamp = self.live_read(
            "orchestrator_fetch_logs",
            {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "backend": backend},
            lambda: cap_log(
                self.client(backend).task_log(dag_id, run_id, task_id),
                self.ctx.scrubber(),
                self.conf.max_log_chars,
            ),
        )
        return {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "log_text": capped.text,
            "log_length_chars": capped.length_chars,
            "truncated": capped.truncated,
            "backend": backend,
            "provenance": stamp,
        }

    def detect_patterns(self, log_text: str, patterns: list[str] | None) -> shapes.DetectedPatterns:
        limit = self.conf.pattern_timeout_seconds
        if patterns:
            return {
                "results": detect_patterns(log_text, patterns, timeout_seconds=limit),
                "patterns_checked": len(patterns),
                "builtin_signatures": False,
                "matched_signatures": [],
            }
        results = detect_signatures(log_text, timeout_seconds=limit)
        return {
            "results": results,
            "patterns_checked": len(SIGNATURES),
            "builtin_signatures": True,
            "matched_signatures": [r["signature"] for r in results if "signature" in r],
        }

    def run_history(self, dag_id: str, backend: str, lookback_days: int) -> shapes.RunHistory:
        since = datetime.now(UTC) - timedelta(days=lookback_days)
        cached = self.cached_history(backend, dag_id, since)
        if cached is not None:
            snapshot, runs = cached
            stale_reason = newer_run(self.client(backend), dag_id, runs)
            body = {"dag_id": dag_id, "lookback_days": lookback_days, **summarize(runs), "backend": backend}
            return self.ctx.cached_answer(snapshot, body, stale_reason=stale_reason)  # type: ignore[return-value]
        runs, stamp = self.live_read(
            "orchestrator_get_run_history",
            {"dag_id": dag_id, "lookback_days": lookback_days, "backend": backend},
            lambda: self.client(backend).list_runs(dag_id, since=since, limit=RUN_SCAN_LIMIT),
        )
        return {
            "dag_id": dag_id,
            "lookback_days": lookback_days,
            **summarize(runs),
            "backend": backend,
            "provenance": stamp,
        }  # type: ignore[typeddict-item]

    def cached_history(
        self, backend: str, dag_id: str, since: datetime
    ) -> tuple[Snapshot, list[RunRecord]] | None:
        """The tracked DAG's runs from the `orchestrator_runs_<backend>` snapshot, when it covers the window."""
        snapshot = self.ctx.latest_or_none(f"orchestrator_runs_{backend}")
        if snapshot is None:
            return None
        covered = snapshot.data.get("since")
        if not covered or since.isoformat() < covered:
            return None  # the window reaches further back than the snapshot keeps: ask the backend
        for dag in snapshot.data.get("dags", []):
            if dag.get("dag_id") == dag_id and dag.get("tracked"):
                runs: list[RunRecord] = [
                    {
                        "run_id": r["run_id"],
                        "state": r["state"],
                        "status": r["status"],
                        "execution_date": r.get("execution_date") or r.get("start_date"),
                        "start_date": r.get("start_date"),
                        "end_date": r.get("end_date"),
                        "duration_seconds": r.get("duration_seconds"),
                        "run_type": r.get("run_type"),
                        "external_trigger": r.get("external_trigger"),
                    }
                    for r in dag.get("runs", [])
                    if (r.get("execution_date") or r.get("start_date") or "") >= since.isoformat()
                ]
                return snapshot, runs
        return None


def status_filter(status: str) -> Status:
    normalized = normalize_status(status)
    if normalized == "other" and status.lower() not in (
        "cancelled",
        "canceled",
        "paused",
        "skipped",
        "managed",
    ):
        raise ToolFailure(
            "invalid_argument",
            f"status {status!r} is not a run state; use e.g. success, failed, running, queued "
            "(or the backend's names: COMPLETED, FAILED, SUCCESS, FAILURE, ...), or any",
        )
    return normalized


def _reason(conf: dict[str, Any] | None) -> str | None:
    reason = (conf or {}).get("reason")
    return str(reason) if reason else None


def check_trigger(settings: Settings, backend: str, dag_id: str, conf: dict[str, Any] | None) -> None:
    """Refuse, before any call or audit run, a DAG off the allow-list or a conf outside the bounds or its schema."""
    if not trigger_allowed(backend, dag_id, triggerable_dags(settings, backend)):
        raise ToolFailure(
            "trigger_not_allowed",
            f"{dag_id!r} is not on the {backend} trigger allow-list",
            hint=f"An operator adds it to orchestrators.{backend}.triggerable in ade.yaml (default: the tracked "
            "DAGs); the platform's internal Dagster jobs are never triggerable.",
        )
    limits = settings.orchestrators
    check_conf(
        conf, max_bytes=limits.max_conf_bytes, max_depth=limits.max_conf_depth, max_keys=limits.max_conf_keys
    )
    schema = conf_schema(settings, backend, dag_id)
    if schema is not None:
        check_conf_schema(conf, schema, dag_id)


def newer_run(client: OrchestratorClient, dag_id: str, runs: list[RunRecord]) -> str | None:
    """Why the snapshot is stale: the backend's newest run is not in it (one cheap call); None if current."""
    try:
        newest = client.list_runs(dag_id, limit=1)
    except OrchestratorError:
        return "the orchestrator could not be reached to check for newer runs"
    if newest and newest[0]["run_id"] not in {r["run_id"] for r in runs}:
        return f"a newer run ({newest[0]['run_id']}) exists than the snapshot holds"
    if (
        newest
        and runs
        and newest[0]["state"] != next(r["state"] for r in runs if r["run_id"] == newest[0]["run_id"])
    ):
        return f"run {newest[0]['run_id']} changed state since the snapshot"
    return None
