"""Prefect 3's REST API over httpx (a self-hosted server, or Prefect Cloud with an API key).

Not the `prefect` package: its pins conflict with ours and it is slow to import (docs/ORCHESTRATORS.md). A
"DAG" is a deployment (`flow/deployment`) or a flow name; a run is a flow run (id); a task is a task run of it,
named by its run name (`dbt_build-4f1`), its task name (`dbt_build`: the latest such run) or its id. Lists
are read with the API's filter endpoints, page by page; states are Prefect's state types (COMPLETED, FAILED...).
The first request asks the server's version (`GET /admin/version`) and refuses any but Prefect 3's, whose API
this client speaks (a server without that endpoint, e.g. Prefect Cloud's workspace API, is taken as it is).
"""

from __future__ import annotations

import base64
import logging
import uuid
from datetime import datetime
from typing import Any

from ade_platform.clients.http import HttpClient, segment
from ade_platform.clients.orchestrators.base import (
    DagInfo,
    OrchestratorError,
    TaskInfo,
    TaskRecord,
    upstream_error,
)
from ade_platform.lib.orchestrators.runs import RunRecord, normalize_status

PAGE = 200  # the server's default maximum page size
MAX_LOG_LINES = 20_000
SUPPORTED_MAJOR = "3"


class PrefectClient:
    backend = "prefect"

    def __init__(
        self,
        api_url: str,
        *,
        api_key: str | None = None,
        auth_string: str | None = None,
        timeout: float = 30,
        transport: Any = None,
    ):
        self._version_checked = False
        headers = {}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        elif auth_string:
            headers["Authorization"] = "Basic " + base64.b64encode(auth_string.encode()).decode()
        # Redirects within the configured origin are followed, never off it (they would carry the credentials).
        self.api = HttpClient(
            api_url,
            name="Prefect",
            error=OrchestratorError,
            timeout=timeout,
            headers=headers,
            follow_redirects=True,
            transport=transport,
        )

    @classmethod
    def from_settings(cls, settings: Any) -> PrefectClient:
        return cls(
            settings.api_url,
            api_key=settings.api_key.get_secret_value() if settings.api_key else None,
            auth_string=settings.auth_string.get_secret_value() if settings.auth_string else None,
            timeout=settings.timeout_seconds,
        )

    def _check_version(self) -> None:
        response = self.api.request("GET", "/admin/version")
        try:
            version = response.json() if response.status_code == 200 else None
        except ValueError:
            version = None
        if isinstance(version, str) and version.split(".")[0] != SUPPORTED_MAJOR:
            raise OrchestratorError(
                "upstream_error",
                f"the server runs Prefect {version[:40]}; ADE's client speaks Prefect {SUPPORTED_MAJOR}'s REST API",
            )
        self._version_checked = True

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        if not self._version_checked:
            self._check_version()
        response = self.api.request(method, path, **kwargs)
        if response.status_code == 404:
            return None
        if response.status_code not in (200, 201):
            raise upstream_error("Prefect", response)
        return response.json()

    def _filter(self, path: str, body: dict[str, Any], limit: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        while len(items) < limit:
            page = self._send(  # a filter is a read sent as POST: safe to send again
                "POST",
                path,
                json={**body, "limit": min(PAGE, limit - len(items)), "offset": len(items)},
                repeatable=True,
            )
            if not page:
                break
            items += page
            if len(page) < min(PAGE, limit - len(items) + len(page)):
                break
        return items

    # --- DAGs: deployments and flows --------------------------------------------------------------------
    def _scope(self, dag_id: str) -> dict[str, Any]:
        """The flow-run filter for a deployment (`flow/deployment`) or a flow name."""
        if "/" in dag_id:
            flow_name, _, deployment = dag_id.partition("/")
            if not flow_name or not deployment:
                raise OrchestratorError("dag_not_found", f"Prefect has no deployment {dag_id!r}")
            found = self._send("GET", f"/deployments/name/{segment(flow_name)}/{segment(deployment)}")
            if found is None:
                raise OrchestratorError("dag_not_found", f"Prefect has no deployment {dag_id!r}")
            return {"deployments": {"id": {"any_": [found["id"]]}}}
        found = self._send("GET", f"/flows/name/{segment(dag_id)}")
        if found is None:
            raise OrchestratorError("dag_not_found", f"Prefect has no flow or deployment {dag_id!r}")
        return {"flows": {"id": {"any_": [found["id"]]}}}

    def list_dags(self) -> list[DagInfo]:
        flows = {f["id"]: f["name"] for f in self._filter("/flows/filter", {}, 10_000)}
        dags: list[DagInfo] = []
        for d in self._filter("/deployments/filter", {}, 10_000):
            schedules = d.get("schedules") or []
            cron = next((s.get("schedule", {}).get("cron") for s in schedules if s.get("schedule")), None)
            dags.append(
                {
                    "dag_id": f"{flows.get(d['flow_id'], d['flow_id'])}/{d['name']}",
                    "description": d.get("description"),
                    "schedule": cron,
                    "paused": d.get("paused"),
                    "asset_keys": [],
                }
            )
        return dags

    # --- runs -------------------------------------------------------------------------------------------
    def list_runs(self, dag_id: str, *, since: datetime | None = None, limit: int = 100) -> list[RunRecord]:
        body: dict[str, Any] = {**self._scope(dag_id), "sort": "EXPECTED_START_TIME_DESC"}
        if since is not None:
            body["flow_runs"] = {"expected_start_time": {"after_": since.isoformat()}}
        return [_run(r) for r in self._filter("/flow_runs/filter", body, limit)]

    def _flow_run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        scope = self._scope(dag_id)
        runs = (
            self._filter("/flow_runs/filter", {**scope, "flow_runs": {"id": {"any_": [run_id]}}}, 1)
            if _is_uuid(run_id)
            else []
        )
        if not runs:
            raise OrchestratorError("run_not_found", f"{dag_id!r} has no flow run {run_id!r}")
        return runs[0]

    def get_run(self, dag_id: str, run_id: str) -> RunRecord:
        return _run(self._flow_run(dag_id, run_id))

    def trigger(self, dag_id: str, conf: dict[str, Any] | None) -> RunRecord:
        """A flow run of the deployment, with conf as its parameters (a flow name works if it has one deployment)."""
        if "/" in dag_id:
            flow_name, _, name = dag_id.partition("/")
            if not flow_name or not name:
                raise OrchestratorError("dag_not_found", f"Prefect has no deployment {dag_id!r}")
            deployment = self._send("GET", f"/deployments/name/{segment(flow_name)}/{segment(name)}")
        else:
            flow = self._send("GET", f"/flows/name/{segment(dag_id)}")
            found = (
                self._filter("/deployments/filter", {"flows": {"id": {"any_": [flow["id"]]}}}, 2)
                if flow
                else []
            )
            deployment = found[0] if len(found) == 1 else None
            if flow is not None and deployment is None:
                raise OrchestratorError(
                    "dag_not_found",
                    f"flow {dag_id!r} has {len(found)} deployments; name one as flow/deployment",
                )
        if deployment is None:
            raise OrchestratorError("dag_not_found", f"Prefect has no deployment {dag_id!r}")
        created = self._send(
            "POST",
            f"/deployments/{segment(deployment['id'])}/create_flow_run",
            json={"parameters": conf or {}},
        )
        if created is None:
            raise OrchestratorError("dag_not_found", f"Prefect has no deployment {dag_id!r}")
        return _run(created)

    # --- task runs --------------------------------------------------------------------------------------
    def _task_runs(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        self._flow_run(dag_id, run_id)
        return self._filter(
            "/task_runs/filter",
            {"flow_runs": {"id": {"any_": [run_id]}}, "sort": "EXPECTED_START_TIME_DESC"},
            10_000,
        )

    def list_tasks(self, dag_id: str, run_id: str) -> list[TaskRecord]:
        return [_task(t) for t in self._task_runs(dag_id, run_id)]

    def _task_run(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        runs = self._task_runs(dag_id, run_id)
        for match in (
            lambda t: t["id"] == task_id,
            lambda t: t["name"] == task_id,
            lambda t: t["name"].rsplit("-", 1)[0] == task_id,  # newest first: the latest run of that task
        ):
            for t in runs:
                if match(t):
                    return t
        raise OrchestratorError(
            "task_not_found",
            f"flow run {run_id!r} has no task run {task_id!r}; task runs: {[t['name'] for t in runs][:50]}",
        )

    def task_status(self, dag_id: str, run_id: str, task_id: str) -> TaskRecord:
        return _task(self._task_run(dag_id, run_id, task_id))

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> str:
        task = self._task_run(dag_id, run_id, task_id)
        # Newest first: a log longer than MAX_LOG_LINES keeps its end, where the error is (the answer keeps the
        # tail too); then back into time order.
        logs = self._filter(
            "/logs/filter",
            {"logs": {"task_run_id": {"any_": [task["id"]]}}, "sort": "TIMESTAMP_DESC"},
            MAX_LOG_LINES,
        )
        logs.reverse()
        lines = [
            f"[{entry.get('timestamp')}] {logging.getLevelName(entry.get('level', 20))} {entry.get('name')} - "
            f"{entry.get('message', '')}"
            for entry in logs
        ]
        return "\n".join(lines) + ("\n" if lines else "")

    def dag_tasks(self, dag_id: str) -> list[TaskInfo]:
        """The tasks the latest flow run ran (a flow's tasks are only known from its runs)."""
        runs = self.list_runs(dag_id, limit=1)
        if not runs:
            return []
        names = sorted({t["name"].rsplit("-", 1)[0] for t in self._task_runs(dag_id, runs[0]["run_id"])})
        return [{"task_id": name, "operator": "task", "dbt_command": None} for name in names]


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _run(run: dict[str, Any]) -> RunRecord:
    state = run.get("state_type") or (run.get("state") or {}).get("type") or "PENDING"
    return {
        "run_id": run["id"],
        "state": state,
        "status": normalize_status(state),
        "execution_date": run.get("expected_start_time") or run.get("created"),
        "start_date": run.get("start_time"),
        "end_date": run.get("end_time"),
        "duration_seconds": run.get("total_run_time") if run.get("start_time") else None,
        "run_type": "scheduled"
        if run.get("auto_scheduled")
        else ("deployment" if run.get("deployment_id") else "manual"),
        "external_trigger": not run.get("auto_scheduled"),
    }


def _task(t: dict[str, Any]) -> TaskRecord:
    state = t.get("state_type") or (t.get("state") or {}).get("type") or "PENDING"
    policy = t.get("empirical_policy") or {}
    retries = policy.get("retries") if policy.get("retries") is not None else policy.get("max_retries")
    return {
        "task_id": t["name"],
        "state": state,
        "status": normalize_status(state),
        "start_date": t.get("start_time"),
        "end_date": t.get("end_time"),
        "duration_seconds": t.get("total_run_time") if t.get("start_time") else None,
        "try_number": t.get("run_count"),
        "max_tries": (retries or 0) + 1,
        "pool": None,
        "operator": "task",
    }
