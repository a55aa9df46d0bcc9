"""What every orchestrator client (Airflow, Prefect, the platform's Dagster) answers, in one vocabulary.

A "DAG" is an Airflow DAG, a Prefect deployment (`flow/deployment`, or a flow name) or a Dagster job; a
"task" is an Airflow task instance, a Prefect task run or a Dagster step. Each client maps its API onto
these records and raises OrchestratorError with a stable code.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from typing_extensions import TypedDict

from ade_platform.lib.orchestrator.runs import RunRecord, Status

ERROR_CODES = (
    "auth_failed",
    "dag_not_found",
    "run_not_found",
    "task_not_found",
    "connection_failed",
    "backend_not_configured",
    "upstream_error",
)


class OrchestratorError(Exception):
    """An expected failure talking to an orchestrator; `code` is one of ERROR_CODES."""

    def __init__(self, code: str, detail: str):
        assert code in ERROR_CODES, code
        super().__init__(detail)
        self.code = code
        self.detail = detail


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


class HttpApi:
    """httpx with the behaviour every orchestrator client needs: timeouts, retries on 429 (honouring
    Retry-After) and on 5xx with capped backoff, and transport failures as `connection_failed`."""

    def __init__(
        self, base_url: str, *, timeout: float, name: str, max_attempts: int = 4, transport: Any = None
    ):
        import httpx

        self.name = name
        self.max_attempts = max_attempts
        from ade_platform.clients.urls import same_origin_only

        # Redirects within the configured origin are followed; one to another origin is refused before it
        # is sent (it would carry the request's headers and a 307's body: a token request's password).
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            transport=transport,
            follow_redirects=True,
            event_hooks={"request": [same_origin_only(base_url)]},
        )

    def send(self, method: str, path: str, **kwargs: Any) -> Any:
        import time

        import httpx

        from ade_platform.clients.urls import CrossOriginRedirect

        delay = 0.5
        for attempt in range(1, self.max_attempts + 1):
            try:
                response = self.http.request(method, path, **kwargs)
            except CrossOriginRedirect as exc:
                raise OrchestratorError("upstream_error", f"{self.name} {exc}") from None
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                raise OrchestratorError(
                    "connection_failed",
                    f"{self.name} is unreachable at {self.http.base_url} ({type(exc).__name__})",
                ) from None
            except httpx.TimeoutException:
                if attempt == self.max_attempts:
                    raise OrchestratorError(
                        "connection_failed", f"{self.name} did not answer in time"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, 8)
                continue
            except httpx.HTTPError as exc:
                raise OrchestratorError("connection_failed", f"{self.name}: {type(exc).__name__}") from None
            retryable = response.status_code == 429 or response.status_code >= 500
            if not retryable or attempt == self.max_attempts:
                return response
            wait = _retry_after(response.headers.get("Retry-After"))
            time.sleep(min(wait if wait is not None else delay, 30))
            delay = min(delay * 2, 8)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.http.close()


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(
                0.0,
                (
                    parsedate_to_datetime(value) - datetime.now(parsedate_to_datetime(value).tzinfo)
                ).total_seconds(),
            )
        except (TypeError, ValueError):
            return None


def upstream_error(name: str, response: Any) -> OrchestratorError:
    """A response we did not expect, described without echoing a body that may quote secrets."""
    if response.status_code in (401, 403):
        return OrchestratorError(
            "auth_failed", f"{name} refused the credentials (HTTP {response.status_code})"
        )
    return OrchestratorError("upstream_error", f"{name} answered HTTP {response.status_code}")


BACKENDS = ("airflow", "prefect", "dagster")


def configured_backends(settings: Any) -> list[str]:
    """The backends this configuration can reach: dagster always, airflow and prefect when configured."""
    conf = settings.orchestrators
    return [b for b in BACKENDS if b == "dagster" or getattr(conf, b) is not None]


def open_client(settings: Any, backend: str) -> OrchestratorClient:
    """The client of one backend, from the settings; `backend_not_configured` when its section is missing."""
    conf = settings.orchestrators
    if backend == "dagster":
        from ade_platform.clients.dagster_runs import DagsterRunsClient
        from ade_platform.config import REPO_ROOT

        launch_env = {"ADE_HOME": str(settings.home)}
        if settings.config_path is not None:
            launch_env["ADE_CONFIG"] = str(settings.config_path)
        from ade_platform.lib.secrets import settings_scrubber

        return DagsterRunsClient(
            settings.dagster_home, launch_env, code_dir=REPO_ROOT, scrub=settings_scrubber(settings)
        )
    if backend == "airflow":
        if conf.airflow is None:
            raise OrchestratorError(
                "backend_not_configured", "no orchestrators.airflow section in the configuration"
            )
        from ade_platform.clients.airflow import AirflowClient

        return AirflowClient.from_settings(conf.airflow)
    if backend == "prefect":
        if conf.prefect is None:
            raise OrchestratorError(
                "backend_not_configured", "no orchestrators.prefect section in the configuration"
            )
        from ade_platform.clients.prefect import PrefectClient

        return PrefectClient.from_settings(conf.prefect)
    raise OrchestratorError("backend_not_configured", f"unknown orchestrator backend {backend!r}")


def tracked_dags(settings: Any, backend: str) -> list[str] | None:
    """The DAGs configured as tracked for a backend; None: every DAG (Dagster's default)."""
    conf = settings.orchestrators
    if backend == "airflow":
        return list(conf.airflow.dags) if conf.airflow else []
    if backend == "prefect":
        return list(conf.prefect.flows) if conf.prefect else []
    return list(conf.dagster.jobs) if conf.dagster.jobs is not None else None


def triggerable_dags(settings: Any, backend: str) -> list[str] | None:
    """What orchestrator_trigger_dag may start on a backend: its `triggerable` list, by default the tracked DAGs
    (None: every job of the platform's definitions, Dagster's default)."""
    section = _section(settings, backend)
    if section is not None and section.triggerable is not None:
        return list(section.triggerable)
    return tracked_dags(settings, backend)


def conf_schema(settings: Any, backend: str, dag_id: str) -> dict[str, Any] | None:
    section = _section(settings, backend)
    return section.conf_schemas.get(dag_id) if section is not None else None


def _section(settings: Any, backend: str) -> Any:
    return getattr(settings.orchestrators, backend, None)


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
    from ade_platform.lib.orchestrator.logs import cap_log
    from ade_platform.lib.orchestrator.patterns import failure_signature

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
