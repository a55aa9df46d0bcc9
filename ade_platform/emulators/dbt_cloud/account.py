"""The emulated account: its jobs, its runs, and the worker that executes runs with dbt-core.

Runs execute one at a time (they share one DuckDB file) in a background thread. A run is `queued` until the worker
takes it, `starting` while the worker prepares the warehouse (the raw tables are generated once with the demo's
Snowfakery recipe), `running` while dbt steps execute, then `success`, `error` or `cancelled`. As in dbt Cloud, the
steps added by a job's "run source freshness" and "generate docs" settings never fail the run; an explicit step that
exits non-zero fails it and skips the rest.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ade_platform.emulators.dbt_cloud import (
    ACCOUNT_ID,
    CI_ENV,
    CI_JOB,
    DAILY_JOB,
    FRESHNESS_GATE_JOB,
    PRODUCTION_ENV,
    PROJECT_ID,
)

QUEUED, STARTING, RUNNING, SUCCESS, ERROR, CANCELLED = 1, 2, 3, 10, 20, 30
HUMANIZED = {1: "Queued", 2: "Starting", 3: "Running", 10: "Success", 20: "Error", 30: "Cancelled"}
ARTIFACTS = ("manifest.json", "run_results.json", "catalog.json", "sources.json")
DBT_COMMANDS = {
    "build", "run", "test", "seed", "snapshot", "source", "docs", "compile", "parse", "ls", "list",
    "run-operation", "deps", "clone", "show",
}  # fmt: skip
REPO_ROOT = Path(__file__).resolve().parents[3]


def now() -> datetime:
    return datetime.now(UTC)


def stamp(moment: datetime | None) -> str | None:
    # dbt Cloud writes timestamps as "2024-02-19 06:20:15.123456+00:00".
    return moment.isoformat(sep=" ") if moment else None


def hms(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def command_error(step: str) -> str | None:
    """Why a step is not a dbt command dbt Cloud would run, or None."""
    try:
        words = shlex.split(step)
    except ValueError as exc:
        return f"cannot parse step {step!r}: {exc}"
    if len(words) < 2 or words[0] != "dbt" or words[1] not in DBT_COMMANDS:
        return f"step {step!r} is not a dbt command (dbt <{'|'.join(sorted(DBT_COMMANDS))}> ...)"
    return None


@dataclass
class Job:
    id: int
    name: str
    environment_id: int
    execute_steps: list[str]
    cron: str | None = None
    generate_docs: bool = False
    run_generate_sources: bool = False
    description: str = ""
    job_type: str = "scheduled"

    def as_api(self, environments: dict[int, dict[str, Any]], related: set[str]) -> dict[str, Any]:
        created = "2026-01-05 09:00:00.000000+00:00"
        out: dict[str, Any] = {
            "id": self.id,
            "account_id": ACCOUNT_ID,
            "project_id": PROJECT_ID,
            "environment_id": self.environment_id,
            "name": self.name,
            "description": self.description,
            "dbt_version": None,
            "job_type": self.job_type,
            "triggers": {
                "github_webhook": self.job_type == "ci",
                "git_provider_webhook": self.job_type == "ci",
                "schedule": self.cron is not None,
                "on_merge": False,
            },
            "execute_steps": list(self.execute_steps),
            "settings": {"threads": 2, "target_name": "default"},
            "state": 1,
            "deactivated": False,
            "generate_docs": self.generate_docs,
            "run_generate_sources": self.run_generate_sources,
            "schedule": {
                "cron": self.cron,
                "date": {"type": "custom_cron", "cron": self.cron} if self.cron else {"type": "every_day"},
                "time": {"type": "every_hour", "interval": 1},
            },
            "created_at": created,
            "updated_at": created,
        }
        if "environment" in related:
            out["environment"] = environments[self.environment_id]
        return out


@dataclass
class Step:
    index: int
    command: str
    fatal: bool
    status: int = QUEUED
    started_at: datetime | None = None
    finished_at: datetime | None = None
    logs: str = ""

    def as_api(self, run_id: int) -> dict[str, Any]:
        duration = (
            (self.finished_at or now()) - self.started_at
        ).total_seconds() if self.started_at else None  # fmt: skip
        return {
            "id": run_id * 100 + self.index,
            "run_id": run_id,
            "account_id": ACCOUNT_ID,
            "index": self.index,
            "name": f"Invoke dbt with `{self.command}`",
            "status": self.status,
            "status_humanized": "Skipped" if self.status == CANCELLED else HUMANIZED[self.status],
            "logs": self.logs,
            "created_at": stamp(self.started_at),
            "started_at": stamp(self.started_at),
            "finished_at": stamp(self.finished_at),
            "duration": hms(duration),
            "duration_humanized": f"{int(duration or 0)} seconds",
        }


@dataclass
class Run:
    id: int
    job: Job
    cause: str
    steps: list[Step]
    triggered_by: str
    steps_override: list[str] | None
    git_sha: str | None
    created_at: datetime = field(default_factory=now)
    status: int = QUEUED
    status_message: str | None = None
    dequeued_at: datetime | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    artifacts: dict[str, Path] = field(default_factory=dict)

    def as_api(
        self, base_url: str, environments: dict[int, dict[str, Any]], related: set[str]
    ) -> dict[str, Any]:
        end = self.finished_at or now()
        duration = (end - self.created_at).total_seconds()
        run_duration = (end - self.started_at).total_seconds() if self.started_at else None
        queued = ((self.started_at or end) - self.created_at).total_seconds()
        out: dict[str, Any] = {
            "id": self.id,
            "trigger_id": self.id,
            "account_id": ACCOUNT_ID,
            "environment_id": self.job.environment_id,
            "project_id": PROJECT_ID,
            "job_definition_id": self.job.id,
            "job_id": self.job.id,
            "status": self.status,
            "status_humanized": HUMANIZED[self.status],
            "status_message": self.status_message,
            "dbt_version": "versionless",
            "git_branch": "main",
            "git_sha": self.git_sha,
            "in_progress": self.status in (QUEUED, STARTING, RUNNING),
            "is_complete": self.status in (SUCCESS, ERROR, CANCELLED),
            "is_success": self.status == SUCCESS,
            "is_error": self.status == ERROR,
            "is_cancelled": self.status == CANCELLED,
            "is_running": self.status == RUNNING,
            "artifacts_saved": bool(self.artifacts) and self.status in (SUCCESS, ERROR, CANCELLED),
            "has_docs_generated": "catalog.json" in self.artifacts,
            "has_sources_generated": "sources.json" in self.artifacts,
            "created_at": stamp(self.created_at),
            "updated_at": stamp(self.finished_at or self.started_at or self.created_at),
            "dequeued_at": stamp(self.dequeued_at),
            "started_at": stamp(self.started_at),
            "finished_at": stamp(self.finished_at),
            "duration": hms(duration),
            "queued_duration": hms(queued),
            "run_duration": hms(run_duration),
            "duration_humanized": f"{int(duration)} seconds",
            # Related objects are null unless include_related names them, as in the real API (its client asks for
            # "trigger": the steps override there is what tells an agent's override run from the job's own).
            "trigger": self.trigger_api() if "trigger" in related else None,
            "job": self.job.as_api(environments, set()) if "job" in related else None,
            "environment": environments[self.job.environment_id] if "environment" in related else None,
            "run_steps": [s.as_api(self.id) for s in self.steps] if "run_steps" in related else [],
            "href": f"{base_url}/deploy/{ACCOUNT_ID}/projects/{PROJECT_ID}/runs/{self.id}/",
        }
        return out

    def trigger_api(self) -> dict[str, Any]:
        """The run's trigger object: the cause and every override the trigger request carried."""
        return {
            "id": self.id,
            "cause": self.cause,
            "cause_humanized": self.cause,
            "cause_category": "scheduled" if self.triggered_by == "scheduler" else "api",
            "job_definition_id": self.job.id,
            "git_branch": None,
            "git_sha": None,
            "github_pull_request_id": None,
            "gitlab_merge_request_id": None,
            "azure_pull_request_id": None,
            "schema_override": None,
            "dbt_version_override": None,
            "threads_override": None,
            "target_name_override": None,
            "generate_docs_override": None,
            "timeout_seconds_override": None,
            "steps_override": self.steps_override,
            "created_at": stamp(self.created_at),
        }


def demo_jobs() -> dict[int, Job]:
    jobs = [
        Job(
            DAILY_JOB,
            "Daily production build",
            PRODUCTION_ENV,
            ["dbt build"],
            cron="0 4 * * *",
            generate_docs=True,
            run_generate_sources=True,
            description="Builds and tests every model; docs and source freshness.",
        ),
        Job(
            CI_JOB,
            "CI: staging models",
            CI_ENV,
            ["dbt build --select staging"],
            job_type="ci",
            description="Builds the staging layer on pull requests.",
        ),
        Job(
            FRESHNESS_GATE_JOB,
            "Hourly freshness gate",
            PRODUCTION_ENV,
            ["dbt source freshness", "dbt build --select marts"],
            cron="0 * * * *",
            description="Rebuilds the marts only when every source is fresh (the payments feed is not).",
        ),
    ]
    return {j.id: j for j in jobs}


ENVIRONMENTS = {
    PRODUCTION_ENV: {"id": PRODUCTION_ENV, "account_id": ACCOUNT_ID, "project_id": PROJECT_ID,
                     "name": "Production", "type": "deployment", "deployment_type": "production"},
    CI_ENV: {"id": CI_ENV, "account_id": ACCOUNT_ID, "project_id": PROJECT_ID,
             "name": "CI", "type": "deployment", "deployment_type": "staging"},
}  # fmt: skip


class Account:
    """Jobs and runs of the emulated account, and the worker executing queued runs."""

    def __init__(self, state_dir: Path, project_dir: Path, recipe: Path | None):
        self.state_dir = state_dir
        self.project_dir = project_dir
        self.recipe = recipe
        self.jobs = demo_jobs()
        self.runs: dict[int, Run] = {}
        self._next_id = 70_001
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._stopping = False
        self._held = False
        self._current: subprocess.Popen[str] | None = None
        self._warehouse = state_dir / "warehouse.duckdb"
        self._worker = threading.Thread(target=self._work, name="dbt-cloud-runs", daemon=True)
        self._worker.start()

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
            if self._current is not None and self._current.poll() is None:
                self._current.terminate()  # no dbt outlives the emulator

    def trigger(
        self, job: Job, cause: str, steps_override: list[str] | None, triggered_by: str = "api"
    ) -> Run:
        commands = list(steps_override or job.execute_steps)
        steps: list[Step] = []
        if job.run_generate_sources:
            steps.append(Step(0, "dbt source freshness", fatal=False))
        steps += [Step(0, c, fatal=True) for c in commands]
        if job.generate_docs:
            steps.append(Step(0, "dbt docs generate", fatal=False))
        for i, step in enumerate(steps, start=1):
            step.index = i
        with self._wake:
            run = Run(self._next_id, job, cause, steps, triggered_by, steps_override, self._git_sha())
            self._next_id += 1
            self.runs[run.id] = run
            self._wake.notify_all()
        return run

    def hold(self, held: bool) -> None:
        """Hold the run queue (no queued run starts, as when every run slot of the account is busy) or release it."""
        with self._wake:
            self._held = held
            self._wake.notify_all()

    def cancel(self, run: Run) -> None:
        with self._lock:
            if run.status == QUEUED:
                run.status, run.finished_at = CANCELLED, now()
                run.status_message = "Cancelled by API"

    def _git_sha(self) -> str:
        # A stand-in for the commit dbt Cloud checks out: a digest of the project's files.
        digest = hashlib.sha1()
        for path in sorted(self.project_dir.rglob("*")):
            if path.is_file() and "target" not in path.parts and "logs" not in path.parts:
                digest.update(path.relative_to(self.project_dir).as_posix().encode())
                digest.update(path.read_bytes())
        return digest.hexdigest()

    # -- the worker ----------------------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            with self._wake:
                while not self._stopping and (
                    self._held or not any(r.status == QUEUED for r in self.runs.values())
                ):
                    self._wake.wait()
                if self._stopping:
                    return
                run = min((r for r in self.runs.values() if r.status == QUEUED), key=lambda r: r.id)
                run.status, run.dequeued_at = STARTING, now()
            try:
                self._execute(run)
            except Exception as exc:  # the emulator must keep serving; the run says what went wrong
                run.status, run.finished_at = ERROR, now()
                run.status_message = f"Internal error: {type(exc).__name__}: {exc}"[:500]

    def _execute(self, run: Run) -> None:
        self._prepare_warehouse()
        run.started_at = now()
        run.status = RUNNING
        run_dir = self.state_dir / "runs" / str(run.id)
        failed: Step | None = None
        for step in run.steps:
            if failed is not None:
                step.status = CANCELLED
                continue
            step.status, step.started_at = RUNNING, now()
            code, logs = self._dbt(step.command)
            step.logs = logs
            step.finished_at = now()
            step.status = SUCCESS if code == 0 else ERROR
            self._keep_artifacts(run, step, run_dir)
            if code != 0 and step.fatal:
                failed = step
        run.finished_at = now()
        if failed is not None:
            run.status = ERROR
            run.status_message = f"Step {failed.index} (`{failed.command}`) failed"
        else:
            run.status = SUCCESS

    def _dbt(self, command: str) -> tuple[int, str]:
        problem = command_error(command)
        if problem:
            return 2, problem
        args = shlex.split(command)[1:]
        dbt = Path(sys.executable).parent / "dbt"
        target = self.state_dir / "target"
        for name in ARTIFACTS:  # only what this step writes is kept for it
            (target / name).unlink(missing_ok=True)
        env = {
            **os.environ,
            "ADE_DUCKDB_PATH": str(self._warehouse),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DBT_TARGET_PATH": str(target),
            "DBT_LOG_PATH": str(self.state_dir / "logs"),
            "DBT_PROJECT_DIR": str(self.project_dir),
            "DBT_PROFILES_DIR": str(self.project_dir),
        }
        proc = subprocess.Popen(
            [str(dbt) if dbt.exists() else "dbt", *args],
            cwd=self.project_dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        with self._lock:
            self._current = proc
        try:
            out, _ = proc.communicate(timeout=1800)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        finally:
            with self._lock:
                self._current = None
        return proc.returncode, (out or "")[-20_000:]

    def _keep_artifacts(self, run: Run, step: Step, run_dir: Path) -> None:
        target = self.state_dir / "target"
        step_dir = run_dir / "steps" / str(step.index)
        step_dir.mkdir(parents=True, exist_ok=True)
        # The run-level artifacts are the build's: a docs step contributes only the catalog, a freshness step only
        # sources.json, so run_results.json stays the one of the models and tests.
        contributes = {
            "dbt docs generate": ("catalog.json",),
            "dbt source freshness": ("sources.json",),
        }.get(step.command, ARTIFACTS)
        for name in ARTIFACTS:
            produced = target / name
            if not produced.exists():
                continue
            shutil.copy2(produced, step_dir / name)
            if name in contributes or (name == "manifest.json" and "manifest.json" not in run.artifacts):
                shutil.copy2(produced, run_dir / name)
                run.artifacts[name] = run_dir / name

    def step_artifact(self, run: Run, index: int, name: str) -> Path | None:
        path = self.state_dir / "runs" / str(run.id) / "steps" / str(index) / name
        return path if path.is_file() else None

    def _prepare_warehouse(self) -> None:
        """The raw tables the project's sources read, generated once into the emulator's own DuckDB file (the
        platform's warehouse belongs to Dagster: DuckDB allows one writing process per file)."""
        marker = self.state_dir / "raw.loaded"
        if marker.exists() or self.recipe is None:
            return
        from ade_platform.lib.datasets import generate_dataset, load_into_duckdb

        generated = generate_dataset(self.recipe, self.state_dir / "raw", seed=11)
        load_into_duckdb(self._warehouse, "raw", generated.tables)
        marker.write_text(str(time.time()))
