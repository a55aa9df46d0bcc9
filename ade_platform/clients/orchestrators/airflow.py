"""Airflow's stable REST API over httpx: Airflow 3 (`/api/v2`, a JWT from `/auth/token`) and Airflow 2
(`/api/v1`, basic auth), chosen by probing the server unless configured.

Lists are paginated with limit/offset; task logs are read per try (Airflow 3 answers structured log lines as
JSON, Airflow 2 plain text); 404s become `dag_not_found`, `run_not_found` or `task_not_found` by asking the
parent resource which one is missing.
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from ade_platform.clients.http import HttpClient, segment
from ade_platform.clients.orchestrators.base import (
    DagInfo,
    OrchestratorError,
    TaskInfo,
    TaskRecord,
    dbt_command_of,
    upstream_error,
)
from ade_platform.lib.orchestrators.runs import RunRecord, duration_seconds, normalize_status

PAGE = 100
MAX_LOG_TRIES = 10


class AirflowClient:
    backend = "airflow"

    def __init__(
        self,
        base_url: str,
        username: str | None = None,
        password: str | None = None,
        *,
        api_version: str = "auto",
        timeout: float = 30,
        transport: Any = None,
    ):
        # Redirects within the configured origin are followed (a proxy's trailing-slash hop), never off it.
        self.api = HttpClient(
            base_url,
            name="Airflow",
            error=OrchestratorError,
            timeout=timeout,
            follow_redirects=True,
            transport=transport,
        )
        self.username = username
        self.password = password
        self._version = None if api_version == "auto" else api_version
        self._token: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Any) -> AirflowClient:
        password = settings.password.get_secret_value() if settings.password else None
        return cls(
            settings.base_url,
            settings.username,
            password,
            api_version=settings.api_version,
            timeout=settings.timeout_seconds,
        )

    # --- transport --------------------------------------------------------------------------------------
    @property
    def version(self) -> str:
        with self._lock:
            if self._version is None:
                self._version = self._probe()
            return self._version

    def _probe(self) -> str:
        """v2 when /api/v2 exists (Airflow 3: it answers, or asks for a token), else v1 (Airflow 2)."""
        response = self.api.request("GET", "/api/v2/version")
        if response.status_code != 404:
            return "v2"
        if self.api.request("GET", "/api/v1/version").status_code != 404:
            return "v1"
        raise OrchestratorError("connection_failed", "no Airflow REST API (/api/v2 or /api/v1) at this URL")

    def _auth(self, refresh: bool = False) -> dict[str, Any]:
        if self.version == "v1":
            return {"auth": (self.username or "", self.password or "")}
        with self._lock:
            if self._token is None or refresh:
                self._token = self._fetch_token()
            return {"headers": {"Authorization": f"Bearer {self._token}"}}

    def _fetch_token(self) -> str:
        if self.username:
            response = self.api.request(  # a login changes nothing: safe to send again
                "POST",
                "/auth/token",
                json={"username": self.username, "password": self.password},
                repeatable=True,
            )
        else:  # simple auth manager with all_admins: a token without credentials
            response = self.api.request("GET", "/auth/token")
        if response.status_code not in (200, 201):
            raise OrchestratorError(
                "auth_failed", f"Airflow refused the token request (HTTP {response.status_code})"
            )
        token = response.json().get("access_token")
        if not token:
            raise OrchestratorError("auth_failed", "Airflow's token endpoint returned no access_token")
        return token

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        url = f"/api/{self.version}{path}"
        extra_headers = kwargs.pop("headers", {})
        auth = self._auth()
        response = self.api.request(method, url, **_merge(auth, extra_headers), **kwargs)
        if response.status_code == 401 and self.version == "v2":  # the JWT expired: one fresh token
            response = self.api.request(
                method, url, **_merge(self._auth(refresh=True), extra_headers), **kwargs
            )
        return response

    def _get(self, path: str, **params: Any) -> dict[str, Any] | None:
        """The JSON body, or None on 404."""
        response = self._call("GET", path, params={k: v for k, v in params.items() if v is not None})
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise upstream_error("Airflow", response)
        return response.json()

    def _pages(self, path: str, key: str, limit: int, **params: Any) -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = []
        while len(items) < limit:
            page = self._get(path, limit=min(PAGE, limit - len(items)), offset=len(items), **params)
            if page is None:
                return None
            batch = page.get(key) or []
            items += batch
            if not batch or len(items) >= int(page.get("total_entries") or 0):
                break
        return items

    # --- DAGs and runs ----------------------------------------------------------------------------------
    def list_dags(self) -> list[DagInfo]:
        dags = self._pages("/dags", "dags", 10_000) or []
        return [
            {
                "dag_id": d["dag_id"],
                "description": d.get("description"),
                "schedule": d.get("timetable_summary") or _interval(d.get("schedule_interval")),
                "paused": d.get("is_paused"),
                "asset_keys": [],
            }
            for d in dags
        ]

    def _require_dag(self, dag_id: str) -> None:
        if self._get(f"/dags/{segment(dag_id)}") is None:
            raise OrchestratorError("dag_not_found", f"Airflow has no DAG {dag_id!r}")

    def list_runs(self, dag_id: str, *, since: datetime | None = None, limit: int = 100) -> list[RunRecord]:
        if self.version == "v2":
            params = {"order_by": "-run_after", "run_after_gte": since.isoformat() if since else None}
        else:
            params = {
                "order_by": "-execution_date",
                "execution_date_gte": since.isoformat() if since else None,
            }
        runs = self._pages(f"/dags/{segment(dag_id)}/dagRuns", "dag_runs", limit, **params)
        if runs is None:
            raise OrchestratorError("dag_not_found", f"Airflow has no DAG {dag_id!r}")
        return [_run(r) for r in runs]

    def get_run(self, dag_id: str, run_id: str) -> RunRecord:
        run = self._get(f"/dags/{segment(dag_id)}/dagRuns/{segment(run_id)}")
        if run is None:
            self._require_dag(dag_id)
            raise OrchestratorError("run_not_found", f"DAG {dag_id!r} has no run {run_id!r}")
        return _run(run)

    def trigger(self, dag_id: str, conf: dict[str, Any] | None) -> RunRecord:
        body: dict[str, Any] = {"conf": conf or {}}
        if self.version == "v2":
            body["logical_date"] = None  # required by Airflow 3's body; null: "now", no data interval
        response = self._call("POST", f"/dags/{segment(dag_id)}/dagRuns", json=body)
        if response.status_code == 404:
            raise OrchestratorError("dag_not_found", f"Airflow has no DAG {dag_id!r}")
        if response.status_code not in (200, 201):
            raise upstream_error("Airflow", response)
        return _run(response.json())

    # --- tasks ------------------------------------------------------------------------------------------
    def _instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        items = self._pages(
            f"/dags/{segment(dag_id)}/dagRuns/{segment(run_id)}/taskInstances", "task_instances", 10_000
        )
        if items is None:
            self.get_run(dag_id, run_id)  # raises dag_not_found or run_not_found
            return []
        return items

    def list_tasks(self, dag_id: str, run_id: str) -> list[TaskRecord]:
        return [_task(ti) for ti in self._instances(dag_id, run_id)]

    def _instance(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        ti = self._get(f"/dags/{segment(dag_id)}/dagRuns/{segment(run_id)}/taskInstances/{segment(task_id)}")
        if ti is None:
            known = [t["task_id"] for t in self._instances(dag_id, run_id)]
            raise OrchestratorError(
                "task_not_found", f"run {run_id!r} of {dag_id!r} has no task {task_id!r}; tasks: {known[:50]}"
            )
        return ti

    def task_status(self, dag_id: str, run_id: str, task_id: str) -> TaskRecord:
        return _task(self._instance(dag_id, run_id, task_id))

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> str:
        """Every try's log, oldest first (a retried task's earlier failures matter), each under a header."""
        ti = self._instance(dag_id, run_id, task_id)
        last = int(ti.get("try_number") or 0)
        parts = []
        for attempt in range(max(1, last - MAX_LOG_TRIES + 1), last + 1):
            text = self._log(dag_id, run_id, task_id, attempt, ti.get("map_index"))
            parts.append(f"--- try {attempt} of {last} ---\n{text}" if last > 1 else text)
        return "\n".join(parts)

    def _log(self, dag_id: str, run_id: str, task_id: str, attempt: int, map_index: int | None) -> str:
        params: dict[str, Any] = {"full_content": "true"}
        if map_index is not None and map_index >= 0:
            params["map_index"] = map_index
        path = f"/dags/{segment(dag_id)}/dagRuns/{segment(run_id)}/taskInstances/{segment(task_id)}/logs/{attempt}"
        # Airflow 3 answers JSON (structured lines); Airflow 2 answers plain text when asked.
        accept = "application/json" if self.version == "v2" else "text/plain"
        response = self._call("GET", path, params=params, headers={"Accept": accept})
        if response.status_code == 404:
            return ""
        if response.status_code != 200:
            raise upstream_error("Airflow", response)
        if "json" not in response.headers.get("content-type", ""):
            return response.text
        return _log_text(response.json().get("content"))

    def dag_tasks(self, dag_id: str) -> list[TaskInfo]:
        """The DAG's tasks; dbt_command from the latest run's rendered bash_command when it calls dbt."""
        body = self._get(f"/dags/{segment(dag_id)}/tasks")
        if body is None:
            raise OrchestratorError("dag_not_found", f"Airflow has no DAG {dag_id!r}")
        rendered: dict[str, str] = {}
        runs = self.list_runs(dag_id, limit=1)
        # Airflow 3's task-instance list leaves rendered_fields empty; only the single-instance endpoint
        # carries them, so it is read for the tasks that template a bash_command (one call each).
        bash_tasks = {
            t["task_id"] for t in body.get("tasks", []) if "bash_command" in (t.get("template_fields") or [])
        }
        if runs and bash_tasks:
            run_path = f"/dags/{segment(dag_id)}/dagRuns/{segment(runs[0]['run_id'])}/taskInstances"
            for ti in self._instances(dag_id, runs[0]["run_id"]):
                if ti["task_id"] not in bash_tasks or ti.get("map_index", -1) != -1:
                    continue
                fields = ti.get("rendered_fields") or (
                    self._get(f"{run_path}/{segment(ti['task_id'])}") or {}
                ).get("rendered_fields")
                command = (fields or {}).get("bash_command")
                if isinstance(command, str):
                    rendered[ti["task_id"]] = command
        return [
            {
                "task_id": t["task_id"],
                "operator": t.get("operator_name") or (t.get("class_ref") or {}).get("class_name"),
                "dbt_command": dbt_command_of(rendered.get(t["task_id"])),
            }
            for t in body.get("tasks", [])
        ]


def _merge(auth: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    merged = dict(auth)
    if headers:
        merged["headers"] = {**auth.get("headers", {}), **headers}
    return merged


def _interval(value: Any) -> str | None:
    if isinstance(value, dict):
        return value.get("value")
    return value


def _run(run: dict[str, Any]) -> RunRecord:
    state = run.get("state") or "queued"
    start, end = run.get("start_date"), run.get("end_date")
    run_type = run.get("run_type")
    external = run.get("external_trigger")
    return {
        "run_id": run.get("dag_run_id") or run.get("run_id"),
        "state": state,
        "status": normalize_status(state),
        "execution_date": run.get("logical_date") or run.get("execution_date") or run.get("run_after"),
        "start_date": start,
        "end_date": end,
        "duration_seconds": run.get("duration")
        if run.get("duration") is not None
        else duration_seconds(start, end),
        "run_type": run_type,
        "external_trigger": external
        if external is not None
        else run_type not in ("scheduled", "asset_triggered"),
    }


def _task(ti: dict[str, Any]) -> TaskRecord:
    state = ti.get("state") or "none"
    start, end = ti.get("start_date"), ti.get("end_date")
    return {
        "task_id": ti["task_id"],
        "state": state,
        "status": normalize_status(state),
        "start_date": start,
        "end_date": end,
        "duration_seconds": ti.get("duration")
        if ti.get("duration") is not None
        else duration_seconds(start, end),
        "try_number": ti.get("try_number"),
        # Airflow's max_tries counts the retries (a try_number up to max_tries + 1 runs); ADE's, every backend's,
        # the most attempts the task may make: its first try plus its retries.
        "max_tries": ti["max_tries"] + 1 if isinstance(ti.get("max_tries"), int) else None,
        "pool": ti.get("pool"),
        "operator": ti.get("operator_name") or ti.get("operator"),
    }


def _log_text(content: Any) -> str:
    """Airflow 3's structured log lines (or a plain string) as text, one line per event."""
    if isinstance(content, str):
        return content
    lines = []
    for item in content or []:
        if not isinstance(item, dict):
            lines.append(str(item))
            continue
        head = " ".join(str(p) for p in (item.get("timestamp"), (item.get("level") or "").upper()) if p)
        logger = item.get("logger")
        event = item.get("event", "")
        lines.append(f"[{head}] {f'{{{logger}}} ' if logger else ''}{event}" if head else str(event))
        # An exception arrives as structured detail next to the event: its type and message, not the stack.
        for detail in item.get("error_detail") or []:
            if isinstance(detail, dict):
                lines.append(f"{detail.get('exc_type', 'Error')}: {detail.get('exc_value', '')}")
    return "\n".join(lines)
