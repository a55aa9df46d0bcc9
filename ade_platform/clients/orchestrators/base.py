"""What every orchestrator client (Airflow, Prefect, the platform's Dagster) answers, in one vocabulary.

A "DAG" is an Airflow DAG, a Prefect deployment (`flow/deployment`, or a flow name) or a Dagster job; a
"task" is an Airflow task instance, a Prefect task run or a Dagster step. Each client maps its API onto
these records and raises OrchestratorError with a stable code.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar, Protocol

from typing_extensions import TypedDict

from ade_platform.lib.errors import CodedError
from ade_platform.lib.orchestrators.runs import RunRecord, Status

ERROR_CODES = (
    "auth_failed",
    "dag_not_found",
    "run_not_found",
    "task_not_found",
    "connection_failed",
    "backend_not_configured",
    "upstream_error",
)


class OrchestratorError(CodedError):
    """An expected failure talking to an orchestrator; `code` is one of ERROR_CODES."""

    # The shared hint of run_not_found speaks of snowfakery runs.
    hints: ClassVar[dict[str, str]] = {
        "run_not_found": "Run ids come from orchestrator_get_last_run, get_run_history or trigger_dag."
    }

    def __init__(self, code: str, detail: str):
        assert code in ERROR_CODES, code
        super().__init__(code, detail)


class TaskRecord(TypedDict):
    task_id: str
    state: str
    status: Status
    start_date: str | None
    end_date: str | None
    duration_seconds: float | None
    try_number: int | None
    max_tries: int | None
    pool: str | None
    operator: str | None


class TaskInfo(TypedDict):
    task_id: str
    operator: str | None
    dbt_command: str | None


class DagInfo(TypedDict):
    dag_id: str
    description: str | None
    schedule: str | None
    paused: bool | None
    asset_keys: list[str]


class OrchestratorClient(Protocol):
    backend: str

    def list_dags(self) -> list[DagInfo]: ...

    def list_runs(self, dag_id: str, *, since: datetime | None = None, limit: int = 100) -> list[RunRecord]:
        """Newest first."""
        ...

    def get_run(self, dag_id: str, run_id: str) -> RunRecord: ...

    def list_tasks(self, dag_id: str, run_id: str) -> list[TaskRecord]: ...

    def task_status(self, dag_id: str, run_id: str, task_id: str) -> TaskRecord: ...

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> str: ...

    def dag_tasks(self, dag_id: str) -> list[TaskInfo]: ...

    def trigger(self, dag_id: str, conf: dict[str, Any] | None) -> RunRecord: ...


def dbt_command_of(text: str | None) -> str | None:
    """The `dbt ...` command line inside a shell command, if there is one."""
    if not text:
        return None
    for line in text.replace(";", "\n").replace("&&", "\n").splitlines():
        words = line.strip().split()
        for i, word in enumerate(words):
            if word == "dbt" or word.endswith("/dbt"):
                return " ".join(["dbt", *words[i + 1 :]])
    return None


def upstream_error(name: str, response: Any) -> OrchestratorError:
    """A response we did not expect, described without echoing a body that may quote secrets."""
    if response.status_code in (401, 403):
        return OrchestratorError(
            "auth_failed", f"{name} refused the credentials (HTTP {response.status_code})"
        )
    return OrchestratorError("upstream_error", f"{name} answered HTTP {response.status_code}")
