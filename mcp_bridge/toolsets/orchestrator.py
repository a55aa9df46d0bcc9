"""orchestrator: runs, tasks and logs of Airflow, Prefect and the platform's own Dagster (spec category 4).

`backend` takes the spec's "airflow" | "prefect" and, beyond the spec, "dagster": this platform's instance (its
jobs, schedules and the audited `live__*` runs of agents' calls), so the demo answers with no other server.
Reads are live: on Airflow and Prefect audited in the background like every read-only live tool; on Dagster
without an audit run (they read the audit trail itself, and would add a run to it at every look). get_last_run and get_run_history
answer from the `orchestrator_runs_<backend>` snapshot for tracked DAGs when it holds the answer.
orchestrator_trigger_dag is an audited Dagster run that starts the DAG run (Airflow), a flow run of the
deployment (Prefect) or submits a run of the platform's job to its instance (Dagster: the daemon launches it, never
this process); only allow-listed DAGs, with a bounded conf (ade_platform/lib/orchestrator/trigger_policy.py).
orchestrator_detect_patterns works on the text given, offline.
Spec tools that return a list return an object here, the list under a named key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, NotRequired, TypeVar

from fastmcp import FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from ade_platform.clients.orchestrators import (
    OrchestratorClient,
    OrchestratorError,
    TaskRecord,
    conf_schema,
    open_client,
    triggerable_dags,
)
from ade_platform.lib.orchestrators.logs import cap_log
from ade_platform.lib.orchestrators.patterns import PatternResult, detect_patterns, detect_signatures
from ade_platform.lib.orchestrators.runs import RunRecord, Status, normalize_status, summarize
from ade_platform.lib.orchestrators.trigger_policy import check_conf, check_conf_schema, trigger_allowed
from ade_platform.lib.shapes import OPEN
from ade_platform.store import SnapshotNotFound
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY, READ_ONLY_OPEN_WORLD, new_toolset

T = TypeVar("T")
TRIGGER = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True)
RUN_SCAN_LIMIT = 500

Backend = Annotated[
    Literal["airflow", "prefect", "dagster"],
    Field(description="Which orchestrator: airflow, prefect, or dagster (this platform's own instance)."),
]
DagId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=250,
        description="The Airflow DAG id, the Prefect deployment (flow/deployment) or flow name, or the "
        "Dagster job name.",
    ),
]
RunId = Annotated[str, Field(min_length=1, max_length=250, description="The run id.")]
TaskId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=250,
        description="The task id (Airflow), task run name or id (Prefect) or step key (Dagster).",
    ),
]


class Provenance(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    source: str
    run_id: NotRequired[str | None]
    elapsed_ms: NotRequired[float]
    asset: NotRequired[str]
    version: NotRequired[str]
    materialized_at: NotRequired[str]
    age_seconds: NotRequired[float]
    stale: NotRequired[bool]
    stale_reason: NotRequired[str | None]


class LastRun(RunRecord):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dag_id: str
    backend: str
    provenance: Provenance


class Triggered(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dag_id: str
    run_id: str
    state: str
    execution_date: str | None
    conf: dict[str, Any] | None
    backend: str
    provenance: Provenance


class TaskStatus(TaskRecord):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dag_id: str
    run_id: str
    backend: str
    provenance: Provenance


class Logs(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dag_id: str
    run_id: str
    task_id: str
    log_text: str
    log_length_chars: int
    truncated: bool
    backend: str
    provenance: Provenance


class DetectedPatterns(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    results: list[PatternResult]
    patterns_checked: int
    builtin_signatures: bool
    matched_signatures: list[str]


class HistoryRun(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    run_id: str
    state: str
    execution_date: str | None
    duration_seconds: float | None
    run_type: str | None


class RunHistory(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    dag_id: str
    lookback_days: int
    runs: list[HistoryRun]
    total_runs: int
    success_count: int
    failure_count: int
    avg_duration_seconds: float | None
    backend: str
    provenance: Provenance


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset(
        "orchestrator",
        "Runs, tasks and logs of Airflow, Prefect and this platform's own Dagster (backend: dagster): find the "
        "failed run, the failed task, its log and the matched failure signature; trigger a run.",
    )
    settings = ctx.settings
    conf = settings.orchestrators
    clients: dict[str, OrchestratorClient] = {}
    lock = threading.Lock()

    def client(backend: str) -> OrchestratorClient:
        with lock:
            if backend not in clients:
                clients[backend] = open_client(settings, backend)
            return clients[backend]

    def live_read(tool: str, arguments: dict[str, Any], fn: Callable[[], T]) -> tuple[T, Provenance]:
        if arguments["backend"] == "dagster":
            # Reading the platform's own run history: no audit run, or every look would add one to it.
            started = time.perf_counter()
            value = fn()
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            return value, {"source": "live", "run_id": None, "elapsed_ms": elapsed}
        client(arguments["backend"])  # an unconfigured backend fails here, before any audit run starts
        result = ctx.live().run(tool, fn, arguments=arguments, effects="none")
        return result.value, result.stamp()  # type: ignore[return-value]

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def orchestrator_get_last_run(
        dag_id: DagId,
        backend: Backend,
        status: Annotated[
            str,
            Field(
                max_length=40,
                description="Run state to filter on, in the backend's words (Airflow: success, failed, "
                "running; Prefect: COMPLETED, FAILED, RUNNING; Dagster: SUCCESS, FAILURE, STARTED) or "
                "any: the latest run whatever its state. Default: success.",
            ),
        ] = "success",
    ) -> LastRun:
        """The most recent run of a DAG (Airflow), deployment or flow (Prefect) or job (Dagster) in a state.

        Use it to see when a pipeline last succeeded, or find its latest failed run
        (status "failed") before reading its tasks and logs.
        """
        wanted = None if status.lower() == "any" else _status_filter(status)

        def run() -> RunRecord | None:
            for record in client(backend).list_runs(dag_id, limit=RUN_SCAN_LIMIT):
                if wanted is None or record["status"] == wanted or record["state"].lower() == status.lower():
                    return record
            return None

        record, stamp = live_read(
            "orchestrator_get_last_run", {"dag_id": dag_id, "status": status, "backend": backend}, run
        )
        if record is None:
            raise ToolFailure("no_matching_run", f"no run of {dag_id!r} on {backend} in state {status!r}")
        return ctx.observed(
            "orchestrator_get_last_run",
            {"dag_id": dag_id, **record, "backend": backend, "provenance": stamp},
            backend=backend,
            latest=wanted is None,
        )  # type: ignore[return-value]

    @server.tool(annotations=TRIGGER)
    def orchestrator_trigger_dag(
        dag_id: DagId,
        backend: Backend,
        conf: Annotated[
            dict[str, Any] | None,
            Field(
                description="Run configuration: DAG conf (Airflow), flow parameters (Prefect), recorded in "
                "the run's tags (Dagster). Plain JSON within orchestrators.max_conf_bytes, max_conf_depth "
                "and max_conf_keys, matching the DAG's conf schema if it has one. Put the reason in "
                "conf.reason: it is the audit trail.",
            ),
        ] = None,
    ) -> Triggered:
        """Start a run now and return at once with its run id (not idempotent: two calls, two runs).

        Only DAGs on the backend's allow-list (orchestrators.<backend>.triggerable, by default the
        tracked ones) can be started. Airflow: a DAG run with conf; Prefect: a flow run of the
        deployment; Dagster: a run of the platform's job submitted to its instance (the daemon launches
        it). The call itself is an audited Dagster run tagged with the backend, DAG and conf (secrets
        redacted). Follow the run with orchestrator_get_last_run or orchestrator_get_task_status.
        """
        arguments = {"dag_id": dag_id, "backend": backend, "conf": conf}
        if backend != "dagster":
            client(backend)  # an unconfigured backend fails here (opening a client sends no request)
        _check_trigger(settings, backend, dag_id, conf)
        result = ctx.live().run(
            "orchestrator_trigger_dag",
            lambda: client(backend).trigger(dag_id, conf),
            arguments=arguments,
            cause=_reason(conf),
            effects="external",
        )
        record: RunRecord = result.value
        return {
            "dag_id": dag_id,
            "run_id": record["run_id"],
            "state": record["state"],
            "execution_date": record["execution_date"],
            "conf": conf,
            "backend": backend,
            "provenance": result.stamp(),  # type: ignore[typeddict-item]
        }

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def orchestrator_get_task_status(
        dag_id: DagId, run_id: RunId, task_id: TaskId, backend: Backend
    ) -> TaskStatus:
        """Status, timing, try number, retries allowed and pool of one task in a run.

        Use it to see which task of a failed run failed, and how long it ran.
        """
        task, stamp = live_read(
            "orchestrator_get_task_status",
            {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "backend": backend},
            lambda: client(backend).task_status(dag_id, run_id, task_id),
        )
        return {"dag_id": dag_id, "run_id": run_id, **task, "backend": backend, "provenance": stamp}  # type: ignore[typeddict-item]

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def orchestrator_fetch_logs(dag_id: DagId, run_id: RunId, task_id: TaskId, backend: Backend) -> Logs:
        """The log text of one task of a run, capped (the tail is kept: errors are at the end).

        `truncated` says the log was longer than the cap (orchestrators.max_log_chars, 50,000 by
        default); `log_length_chars` is its full length. Configured secrets and common token shapes
        are replaced with ***. Pass log_text to orchestrator_detect_patterns to structure it.
        """

        def run() -> str:
            text = client(backend).task_log(dag_id, run_id, task_id)
            capped = cap_log(text, ctx.scrubber(), conf.max_log_chars)
            return capped  # type: ignore[return-value]

        capped, stamp = live_read(
            "orchestrator_fetch_logs",
            {"dag_id": dag_id, "run_id": run_id, "task_id": task_id, "backend": backend},
            run,
        )
        return {
            "dag_id": dag_id,
            "run_id": run_id,
            "task_id": task_id,
            "log_text": capped.text,  # type: ignore[attr-defined]
            "log_length_chars": capped.length_chars,  # type: ignore[attr-defined]
            "truncated": capped.truncated,  # type: ignore[attr-defined]
            "backend": backend,
            "provenance": stamp,
        }

    @server.tool(annotations=READ_ONLY)
    def orchestrator_detect_patterns(
        log_text: Annotated[
            str,
            Field(
                max_length=2_000_000, description="The log text to scan, e.g. from orchestrator_fetch_logs."
            ),
        ],
        patterns: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=1000)]] | None,
            Field(
                max_length=100,
                description='Regexes or literal strings, e.g. ["ERROR", "column .* does not exist"]. '
                "Omit to apply the built-in failure signatures (dbt database/compilation errors, missing "
                "column/relation, permission denied, out of memory, timeout, connection refused).",
            ),
        ] = None,
    ) -> DetectedPatterns:
        """Every line matching each pattern: line number, matched text, line, capture groups.

        Patterns with no match are left out; a pattern that is not a valid regex comes back as
        {"error": "invalid_regex"}, one that runs past the time limit as {"error": "pattern_timeout"},
        one whose compiled program would be too large as {"error": "pattern_too_complex"}. Long texts
        and groups are cut; a pattern with more matches than listed says truncated: true.
        With no patterns, the built-in signatures run and `matched_signatures` names those found, most
        specific first.
        """
        limit = conf.pattern_timeout_seconds
        if patterns:
            results = detect_patterns(log_text, patterns, timeout_seconds=limit)
            return {
                "results": results,
                "patterns_checked": len(patterns),
                "builtin_signatures": False,
                "matched_signatures": [],
            }
        from ade_platform.lib.orchestrators.patterns import SIGNATURES

        results = detect_signatures(log_text, timeout_seconds=limit)
        return {
            "results": results,
            "patterns_checked": len(SIGNATURES),
            "builtin_signatures": True,
            "matched_signatures": [r["signature"] for r in results if "signature" in r],
        }

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def orchestrator_get_run_history(
        dag_id: DagId,
        backend: Backend,
        lookback_days: Annotated[int, Field(ge=1, le=365, description="Days of history. Default: 7.")] = 7,
    ) -> RunHistory:
        """Runs of a DAG over the lookback window, newest first, with success/failure counts and the mean
        duration: for flapping pipelines, degrading run times and failure frequency."""
        since = datetime.now(UTC) - timedelta(days=lookback_days)
        cached = _cached_history(ctx, backend, dag_id, since)
        if cached is not None:
            snapshot, runs, _ = cached
            stale_reason = _newer_run(client(backend), dag_id, runs)
            body = {"dag_id": dag_id, "lookback_days": lookback_days, **summarize(runs), "backend": backend}
            return ctx.cached_answer(snapshot, body, stale_reason=stale_reason)  # type: ignore[return-value]
        runs, stamp = live_read(
            "orchestrator_get_run_history",
            {"dag_id": dag_id, "lookback_days": lookback_days, "backend": backend},
            lambda: client(backend).list_runs(dag_id, since=since, limit=RUN_SCAN_LIMIT),
        )
        return {
            "dag_id": dag_id,
            "lookback_days": lookback_days,
            **summarize(runs),
            "backend": backend,
            "provenance": stamp,
        }  # type: ignore[typeddict-item]

    return server


def _status_filter(status: str) -> Status:
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


def _check_trigger(settings: Any, backend: str, dag_id: str, conf: dict[str, Any] | None) -> None:
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


def _newer_run(client: OrchestratorClient, dag_id: str, runs: list[RunRecord]) -> str | None:
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


def _cached_history(
    ctx: BridgeContext, backend: str, dag_id: str, since: datetime
) -> tuple[Any, list[RunRecord], str | None] | None:
    """The tracked DAG's runs from the `orchestrator_runs_<backend>` snapshot, when it covers the window."""
    try:
        snapshot = ctx.reader.latest(f"orchestrator_runs_{backend}")
    except SnapshotNotFound:
        return None
    covered = snapshot.data.get("since")
    if not covered or since.isoformat() < covered:
        return None  # the window reaches further back than the snapshot keeps: ask the backend
    for dag in snapshot.data.get("dags", []):
        if dag.get("dag_id") == dag_id and dag.get("tracked"):
            runs = [
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
            return snapshot, runs, None  # type: ignore[return-value]
    return None
