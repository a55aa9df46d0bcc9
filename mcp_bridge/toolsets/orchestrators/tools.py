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
    "backend": "dagster means this platform's own instance.",
    "run_id, task_id": (
        "The run's id; the task id (Airflow), task run name or id (Prefect) or step key (Dagster)."
    ),
    "dag_id": (
        "The Airflow DAG id, the Prefect deployment (flow/deployment) or flow name, or the Dagster job name."
    ),
}
RunId = Annotated[str, Field(min_length=1, max_length=250)]
TaskId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=250,
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
                description="In the backend's words (success, failed, running; COMPLETED, FAILED; SUCCESS, "
                "FAILURE) or any.",
            ),
        ] = "success",
    ) -> LastRun:
        """The latest run of an Airflow DAG, Prefect deployment or flow, or Dagster job in a state (default
        success; status failed finds the last failure)."""
        return self.service.last_run(dag_id, backend, status)

    @tool(TRIGGER)
    def orchestrator_trigger_dag(
        self,
        dag_id: DagId,
        backend: Backend,
        conf: Annotated[
            dict[str, Any] | None,
            Field(
                description="DAG conf (Airflow), flow parameters (Prefect), run tags (Dagster): small plain "
                "JSON. Put the reason in conf.reason (the audit trail).",
            ),
        ] = None,
    ) -> Triggered:
        """Start an Airflow DAG, Prefect deployment or Dagster job run now and return its run id (not
        idempotent: two calls, two runs). Allow-listed DAGs only; recorded as an audited run."""
        return self.service.trigger(dag_id, backend, conf)

    @tool(READ_ONLY_OPEN_WORLD)
    def orchestrator_get_task_status(
        self, dag_id: DagId, run_id: RunId, task_id: TaskId, backend: Backend
    ) -> TaskStatus:
        """Status, timing, tries and pool of one task of an orchestrator run: which task of a failed run failed,
        and how long it ran."""
        return self.service.task_status(dag_id, run_id, task_id, backend)

    @tool(READ_ONLY_OPEN_WORLD)
    def orchestrator_fetch_logs(
        self, dag_id: DagId, run_id: RunId, task_id: TaskId, backend: Backend
    ) -> Logs:
        """The log of one task of an orchestrator run, capped with the tail kept (errors are at the end),
        secrets masked. Pass log_text to orchestrator_detect_patterns."""
        return self.service.fetch_logs(dag_id, run_id, task_id, backend)

    @tool(READ_ONLY)
    def orchestrator_detect_patterns(
        self,
        log_text: Annotated[
            str,
            Field(max_length=2_000_000),
        ],
        patterns: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=1000)]] | None,
            Field(
                max_length=100,
                description="Regexes or literals; default: the built-in failure signatures.",
            ),
        ] = None,
    ) -> DetectedPatterns:
        """Lines of a log matching regexes, or the built-in failure signatures (dbt errors, missing column,
        permission, OOM, timeout), with line numbers and groups. List `results`."""
        return self.service.detect_patterns(log_text, patterns)

    @tool(READ_ONLY_OPEN_WORLD)
    def orchestrator_get_run_history(
        self,
        dag_id: DagId,
        backend: Backend,
        lookback_days: Annotated[int, Field(ge=1, le=365)] = 7,
        state: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=40,
                description="In the backend's words, any case.",
            ),
        ] = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> RunHistory:
        """Runs of a DAG or flow over the last days, newest first, with success/failure counts and mean
        duration: flapping pipelines, slowing runs. Paged; state filters."""
        answer = self.service.run_history(dag_id, backend, lookback_days)
        in_state = paging.state_matcher(state)
        in_window = paging.window_matcher(since, until, time.time())
        query = ("orchestrator_get_run_history", backend, dag_id, lookback_days, state, since, until)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "runs", limit, cursor, query=query, item_key=lambda r: r["run_id"],
            keep=lambda r: in_state(r.get("state")) and in_window(r.get("execution_date")),
        )  # fmt: skip
