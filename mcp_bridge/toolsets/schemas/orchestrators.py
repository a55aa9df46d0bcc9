"""Output shapes of the orchestrator toolset (agent-toolset spec category 4), with the spec's field names.

Runs and tasks are the clients' records (one vocabulary for Airflow, Prefect and Dagster) plus the DAG, the
backend and provenance; where the spec returns a list, the answer is an object with the list under a named key.
"""

from __future__ import annotations

from typing import Annotated, Any

from ade_platform.clients.orchestrators import TaskRecord
from ade_platform.lib.orchestrators.patterns import PatternResult
from ade_platform.lib.orchestrators.runs import HistoryRun, RunRecord
from ade_platform.lib.shapes import OpenShape
from mcp_bridge.toolsets.schemas.dbt import _spec_list
from mcp_bridge.toolsets.schemas.paging import Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance


class LastRun(RunRecord):
    dag_id: str
    backend: str
    provenance: Provenance


class Triggered(OpenShape):
    dag_id: str
    run_id: str
    state: str
    execution_date: str | None
    conf: dict[str, Any] | None
    backend: str
    provenance: Provenance


class TaskStatus(TaskRecord, OpenShape):
    dag_id: str
    run_id: str
    backend: str
    provenance: Provenance


class Logs(OpenShape):
    dag_id: str
    run_id: str
    task_id: str
    log_text: str
    log_length_chars: int
    truncated: bool
    backend: str
    provenance: Provenance


class DetectedPatterns(OpenShape):
    results: Annotated[list[PatternResult], _spec_list("one entry per pattern or signature that matched")]
    patterns_checked: int
    builtin_signatures: bool
    matched_signatures: list[str]


class RunHistory(Paged):
    dag_id: str
    lookback_days: int
    runs: list[HistoryRun]
    total_runs: int
    total: int
    success_count: int
    failure_count: int
    avg_duration_seconds: float | None
    backend: str
    provenance: Provenance
