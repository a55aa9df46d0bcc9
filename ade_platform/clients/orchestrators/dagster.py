"""The platform's own Dagster instance read as an orchestrator: jobs, runs, steps and their event logs.

Reads through Dagster's Python API (`DagsterInstance` over `settings.dagster_home`); Dagster is imported on
first use, so importing this module stays cheap. A "DAG" is a job name (the demo's `build_everything`,
`refresh_metadata`, the audited `live__<tool>` jobs of agents' calls); a "task" is a step key.

A trigger submits a run of one of the platform's jobs to the instance the way the UI's Launch button does:
`dagster job launch` (in a child process, against the platform's code location) creates the run from the code
location and hands it to the instance's run coordinator; the daemon (`ade dev` runs one) dequeues it and the run
launcher starts it in a process of its own. Nothing of the job runs in the caller's process.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ade_platform.clients.orchestrators.base import DagInfo, OrchestratorError, TaskInfo, TaskRecord
from ade_platform.lib.orchestrators.runs import RunRecord, duration_seconds, normalize_status
from ade_platform.lib.redact import redact_arguments

MAX_JOBS_SCANNED = 5000
# The code location `dagster dev -w workspace.yaml` serves (its location name is the module's): a run created
# from it is one the daemon can launch.
DEFINITIONS_MODULE = "ade_platform.definitions"
LAUNCH_TIMEOUT_SECONDS = 300
_MAX_TAG_CHARS = 2000


def _iso(ts: float | datetime | None) -> str | None:
    if ts is None:
        return None
    if isinstance(ts, datetime):
        return ts.astimezone(UTC).isoformat()
    return datetime.fromtimestamp(ts, tz=UTC).isoformat()


class DagsterRunsClient:
    backend = "dagster"

    def __init__(
        self,
        dagster_home: Path,
        launch_env: dict[str, str] | None = None,
        code_dir: Path | None = None,
        scrub: Callable[[str], str] | None = None,
    ):
        self.dagster_home = Path(dagster_home)
        # What the launching process needs to load the same definitions: ADE_HOME, ADE_CONFIG.
        self.launch_env = dict(launch_env or {})
        self.code_dir = code_dir
        self.scrub = scrub  # replaces configured secrets in the conf a triggered run is tagged with
        self._instance: Any = None
        self._lock = threading.Lock()

    def instance(self) -> Any:
        with self._lock:
            if self._instance is None:
                # Dagster loads on first use (start-up speed; the cached MCP path never imports it).
                from ade_platform.instance import open_instance

                self._instance = open_instance(self.dagster_home)
            return self._instance

    # --- jobs -------------------------------------------------------------------------------------------
    def list_dags(self) -> list[DagInfo]:
        """Every job with a run in this instance, newest activity first."""
        seen: dict[str, DagInfo] = {}
        for record in self.instance().get_run_records(limit=MAX_JOBS_SCANNED):
            name = record.dagster_run.job_name
            if name not in seen:
                seen[name] = {
                    "dag_id": name,
                    "description": None,
                    "schedule": None,
                    "paused": None,
                    "asset_keys": [],
                }
        schedules = self._schedules()
        for name, info in seen.items():
            if name in schedules:
                info["schedule"], info["paused"] = schedules[name]
        return list(seen.values())

    def _schedules(self) -> dict[str, tuple[str, bool]]:
        """job name -> (cron, paused) for the schedules the instance has state for."""
        out: dict[str, tuple[str, bool]] = {}
        try:
            from dagster._core.scheduler.instigation import InstigatorStatus, InstigatorType

            for state in self.instance().all_instigator_state(instigator_type=InstigatorType.SCHEDULE):
                data = state.instigator_data
                cron = getattr(data, "cron_schedule", None)
                job = getattr(state.origin, "instigator_name", None)
                if cron and job:
                    out[job] = (str(cron), state.status != InstigatorStatus.RUNNING)
        except Exception:  # schedule state is a nicety; a storage quirk must not fail the run answers
            return {}
        return out

    def _require_job(self, dag_id: str) -> None:
        from dagster import RunsFilter

        if not self.instance().get_run_records(filters=RunsFilter(job_name=dag_id), limit=1):
            known = [d["dag_id"] for d in self.list_dags()][:20]
            raise OrchestratorError(
                "dag_not_found", f"no run of Dagster job {dag_id!r} in this instance; jobs with runs: {known}"
            )

    # --- runs -------------------------------------------------------------------------------------------
    def list_runs(self, dag_id: str, *, since: datetime | None = None, limit: int = 100) -> list[RunRecord]:
        from dagster import RunsFilter

        self._require_job(dag_id)
        records = self.instance().get_run_records(
            filters=RunsFilter(job_name=dag_id, created_after=since), limit=limit
        )
        return [self._run(r) for r in records]

    def get_run(self, dag_id: str, run_id: str) -> RunRecord:
        return self._run(self._record(dag_id, run_id))

    def _record(self, dag_id: str, run_id: str) -> Any:
        record = None
        try:
            record = self.instance().get_run_record_by_id(run_id)
        except Exception:  # a malformed id is simply not found
            record = None
        if record is None or record.dagster_run.job_name != dag_id:
            self._require_job(dag_id)
            raise OrchestratorError("run_not_found", f"no run {run_id!r} of Dagster job {dag_id!r}")
        return record

    @staticmethod
    def _run(record: Any) -> RunRecord:
        run = record.dagster_run
        tags = run.tags or {}
        if "dagster/schedule_name" in tags:
            run_type = "scheduled"
        elif "dagster/sensor_name" in tags:
            run_type = "sensor"
        elif "dagster/backfill" in tags:
            run_type = "backfill"
        elif "ade/tool" in tags:
            run_type = "live"
        else:
            run_type = "manual"
        start, end = _iso(record.start_time), _iso(record.end_time)
        state = run.status.value
        return {
            "run_id": run.run_id,
            "state": state,
            "status": normalize_status(state),
            "execution_date": _iso(record.create_timestamp),
            "start_date": start,
            "end_date": end,
            "duration_seconds": duration_seconds(start, end),
            "run_type": run_type,
            "external_trigger": run_type not in ("scheduled", "sensor"),
        }

    # --- steps ------------------------------------------------------------------------------------------
    def list_tasks(self, dag_id: str, run_id: str) -> list[TaskRecord]:
        self._record(dag_id, run_id)
        return [self._task(s) for s in self.instance().get_run_step_stats(run_id)]

    def task_status(self, dag_id: str, run_id: str, task_id: str) -> TaskRecord:
        tasks = self.list_tasks(dag_id, run_id)
        for task in tasks:
            if task["task_id"] == task_id:
                return task
        raise OrchestratorError(
            "task_not_found",
            f"run {run_id!r} of {dag_id!r} has no step {task_id!r}; steps: {[t['task_id'] for t in tasks][:50]}",
        )

    @staticmethod
    def _task(stats: Any) -> TaskRecord:
        start, end = _iso(stats.start_time), _iso(stats.end_time)
        state = stats.status.value if stats.status is not None else "NOT_STARTED"
        return {
            "task_id": stats.step_key,
            "state": state,
            "status": normalize_status(state),
            "start_date": start,
            "end_date": end,
            "duration_seconds": duration_seconds(start, end),
            "try_number": stats.attempts,
            "max_tries": None,  # a Dagster RetryPolicy lives in code, not in the run's record
            "pool": None,
            "operator": "op",
        }

    def task_log(self, dag_id: str, run_id: str, task_id: str) -> str:
        self.task_status(dag_id, run_id, task_id)
        lines = []
        for entry in self.instance().all_logs(run_id):
            if entry.step_key != task_id:
                continue
            lines.append(_format_event(entry))
        return "\n".join(lines) + ("\n" if lines else "")

    def dag_tasks(self, dag_id: str) -> list[TaskInfo]:
        """The steps of the job's latest run (a job's graph lives in code; its latest run shows it)."""
        from dagster import RunsFilter

        records = self.instance().get_run_records(filters=RunsFilter(job_name=dag_id), limit=1)
        if not records:
            return []
        return [
            {"task_id": s.step_key, "operator": "op", "dbt_command": None}
            for s in self.instance().get_run_step_stats(records[0].dagster_run.run_id)
        ]

    def asset_keys(self, dag_id: str) -> list[str]:
        """The asset keys the job's latest run planned to materialize, "a/b" form."""
        from dagster import DagsterEventType, RunsFilter

        records = self.instance().get_run_records(filters=RunsFilter(job_name=dag_id), limit=1)
        if not records:
            return []
        run = records[0].dagster_run
        if run.asset_selection:
            return sorted("/".join(k.path) for k in run.asset_selection)
        planned = (
            self.instance()
            .get_records_for_run(
                run.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION_PLANNED, limit=10_000
            )
            .records
        )
        keys = {"/".join(r.event_log_entry.dagster_event.asset_key.path) for r in planned}
        return sorted(keys)

    def trigger(
        self, dag_id: str, conf: dict[str, Any] | None, *, tool: str = "orchestrator_trigger_dag"
    ) -> RunRecord:
        """Submit a run of the platform's job `dag_id` to the instance (QUEUED until the daemon launches it); its
        tags say who asked and with which conf (redacted)."""
        run_id = str(uuid.uuid4())
        conf_tag = json.dumps(redact_arguments(conf or {}, scrub=self.scrub), default=str)
        tags = {
            "ade/tool": tool,
            "ade/source": "mcp",
            "ade/backend": "dagster",
            "ade/dag_id": dag_id,
            "ade/conf": conf_tag if len(conf_tag) <= _MAX_TAG_CHARS else conf_tag[: _MAX_TAG_CHARS - 1] + "…",
        }
        command = [sys.executable, "-m", "dagster", "job", "launch", "-m", DEFINITIONS_MODULE, "-j", dag_id]
        command += ["--run-id", run_id, "--tags", json.dumps(tags)]
        env = {**os.environ, **self.launch_env, "DAGSTER_HOME": str(self.dagster_home)}
        try:
            done = subprocess.run(
                command,
                cwd=self.code_dir,
                env=env,
                stdin=subprocess.DEVNULL,  # a stdio gateway's stdin carries the MCP protocol
                capture_output=True,
                text=True,
                timeout=LAUNCH_TIMEOUT_SECONDS,
            )
        except subprocess.TimeoutExpired:
            raise OrchestratorError(
                "upstream_error",
                f"Dagster did not take the run of {dag_id!r} within {LAUNCH_TIMEOUT_SECONDS} s",
            ) from None
        record = self.instance().get_run_record_by_id(run_id)
        if record is None:
            if "not found in repository" in done.stderr:
                raise OrchestratorError("dag_not_found", f"the platform defines no Dagster job {dag_id!r}")
            # The launcher's output may quote paths and settings: say only that it failed.
            raise OrchestratorError(
                "upstream_error",
                f"Dagster could not create the run of {dag_id!r} (dagster job launch: {done.returncode})",
            )
        return self._run(record)


def _format_event(entry: Any) -> str:
    """One log line per event: time, level, step, message; a failure adds its error and causes (no stack)."""
    when = datetime.fromtimestamp(entry.timestamp, tz=UTC).strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    level = logging.getLevelName(entry.level) if isinstance(entry.level, int) else str(entry.level)
    event = entry.dagster_event
    message = entry.user_message or (event.message if event is not None and event.message else "")
    if event is not None and not entry.user_message:
        message = f"{event.event_type_value}: {message}".rstrip(": ")
    line = f"[{when}] {level} {entry.step_key} - {message}"
    error = getattr(getattr(event, "event_specific_data", None), "error", None) if event else None
    while error is not None:
        line += f"\n{error.cls_name}: {error.message.strip()}"
        error = error.cause
    return line
