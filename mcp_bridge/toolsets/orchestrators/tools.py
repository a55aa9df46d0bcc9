"""The orchestrator tools as an agent sees them: parameters, descriptions, answer shapes. The service does the
work."""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from pydantic import Field

from ade_platform.lib import paging
from mcp_bridge.toolsets.base import READ_ONLY, READ_ONLY_OPEN_WORLD, TRIGGER, tool
from mcp_bridge.toolsets.orchestrators.service import OrchestratorService
from mcp_bridge.toolsets.schemas.orchestrators import (
    DetectedPatterns,
    LastRun,
    Logs,
    RunHistory,
    TaskStatus,
    Triggered,
)
from mcp_bridge.toolsets.schemas.paging import Cursor, Limit, Since, Until

Backend = Literal["airflow", "prefect", "dagster"]
DagId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=250,
    ),
]

# Parameters several tools take: described once, in the instructions (new_toolset), not in each input schema.
PARAMETERS = {
    "backend": "Which orchestrator: airflow, prefect, or dagster (this platform's own instance).",
    "dag_id": (
        "The Airflow DAG id, the Prefect deployment (flow/deployment) or flow name, or the Dagster job name."
    ),
}
RunId = Annotated[str, Field(min_length=1, max_length=250, description="The run id.")]
TaskId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=250,
        description="The task id (Airflow), task run name or id (Prefect) or step key (Dagster).",
    ),
]


class OrchestratorTools:
    def __init__(self, service: OrchestratorService):
        self.service = service

    @tool(READ_ONLY_OPEN_WORLD)
    def orchestrator_get_last_run(
        self,
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
        return self.service.last_run(dag_id, backend, status)

    @tool(TRIGGER)
    def orchestrator_trigger_dag(
        self,
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
        return self.service.trigger(dag_id, backend, conf)

    @tool(READ_ONLY_OPEN_WORLD)
    def orchestrator_get_task_status(
        self, dag_id: DagId, run_id: RunId, task_id: TaskId, backend: Backend
    ) -> TaskStatus:
        """Status, timing, try number, attempts allowed (max_tries: the first try plus its retries, on every
        backend) and pool of one task in a run; task_id is the one asked for.

        Use it to see which task of a failed run failed, and how long it ran.
        """
        return self.service.task_status(dag_id, run_id, task_id, backend)

    @tool(READ_ONLY_OPEN_WORLD)
    def orchestrator_fetch_logs(
        self, dag_id: DagId, run_id: RunId, task_id: TaskId, backend: Backend
    ) -> Logs:
        """The log text of one task of a run, capped (the tail is kept: errors are at the end).

        `truncated` says the log was longer than the cap (orchestrators.max_log_chars, 50,000 by
        default); `log_length_chars` is its full length. Configured secrets and common token shapes
        are replaced with ***. Pass log_text to orchestrator_detect_patterns to structure it.
        """
        return self.service.fetch_logs(dag_id, run_id, task_id, backend)

    @tool(READ_ONLY)
    def orchestrator_detect_patterns(
        self,
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
        specific first. The spec's list is under `results`.
        """
        return self.service.detect_patterns(log_text, patterns)

    @tool(READ_ONLY_OPEN_WORLD)
    def orchestrator_get_run_history(
        self,
        dag_id: DagId,
        backend: Backend,
        lookback_days: Annotated[int, Field(ge=1, le=365, description="Days of history. Default: 7.")] = 7,
        state: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=40,
                description="Only runs in this state, in the backend's words (success, failed; COMPLETED, "
                "FAILED; SUCCESS, FAILURE), case-insensitive.",
            ),
        ] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> RunHistory:
        """Runs of a DAG over the lookback window, newest first, with success/failure counts and the mean
        duration (over the whole window): for flapping pipelines, degrading run times and failure frequency.
        `runs` is paged (limit, cursor -> next_cursor; docs/PAGING.md) and filtered by state and since/until
        (on execution_date, inside the window); total counts the runs that pass the filters."""
        answer = self.service.run_history(dag_id, backend, lookback_days)
        in_state = paging.state_matcher(state)
        in_window = paging.window_matcher(since, until, time.time())
        query = ("orchestrator_get_run_history", backend, dag_id, lookback_days, state, since, until)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "runs", limit, cursor, query=query, item_key=lambda r: r["run_id"],
            keep=lambda r: in_state(r.get("state")) and in_window(r.get("execution_date")),
        )  # fmt: skip
