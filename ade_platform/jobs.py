"""Start one of the platform's own Dagster jobs on an agent's request (orchestrator_trigger_dag, backend dagster).

The job comes from the platform's definitions (built once, on the first trigger) and runs in the platform's
Dagster instance in a background thread, so the tool returns at once with the run id, as the spec asks. The run
is tagged with the tool, the backend, the job and the agent's `conf` (redacted): operators see in the Dagster UI
who started it and why. Dagster is imported here, never on the bridge's cached path.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.redact import redact_arguments
from ade_platform.lib.secrets import settings_scrubber
from ade_platform.live import _EXECUTION_LOCK, QUIET_CONSOLE, TAG_SOURCE, TAG_TOOL, _truncate

TAG_BACKEND = "ade/backend"
TAG_DAG = "ade/dag_id"
TAG_CONF = "ade/conf"
_RUNNING: set[threading.Thread] = set()


class UnknownJob(LookupError):
    def __init__(self, name: str, known: list[str]):
        super().__init__(name)
        self.name = name
        self.known = known


class JobLauncher:
    def __init__(self, settings: Settings, instance: Any):
        self.settings = settings
        self.instance = instance
        self._defs: Any = None
        self._lock = threading.Lock()

    def definitions(self) -> Any:
        with self._lock:
            if self._defs is None:
                from ade_platform.definitions import build_definitions

                self._defs = build_definitions(self.settings)
            return self._defs

    def job_names(self) -> list[str]:
        return sorted(job.name for job in self.definitions().resolve_all_job_defs())

    def launch(self, job_name: str, conf: dict[str, Any] | None, *, tool: str) -> str:
        """Start the job in the background; return its run id (the run appears in the instance within moments)."""
        known = self.job_names()
        if job_name not in known:
            raise UnknownJob(job_name, known)
        job = self.definitions().resolve_job_def(job_name)
        run_id = str(uuid.uuid4())
        tags = {
            TAG_TOOL: tool,
            TAG_SOURCE: "mcp",
            TAG_BACKEND: "dagster",
            TAG_DAG: job_name,
            TAG_CONF: _truncate(
                json.dumps(redact_arguments(conf or {}, scrub=settings_scrubber(self.settings)), default=str)
            ),
        }

        def execute() -> None:
            try:
                with _EXECUTION_LOCK:
                    job.execute_in_process(
                        instance=self.instance,
                        run_id=run_id,
                        tags=tags,
                        run_config=QUIET_CONSOLE,
                        raise_on_error=False,
                    )
            finally:
                _RUNNING.discard(threading.current_thread())

        worker = threading.Thread(target=execute, name=f"ade-trigger-{job_name}", daemon=True)
        _RUNNING.add(worker)
        worker.start()
        return run_id


def wait_for_triggered(timeout: float = 600) -> None:
    """Wait for the jobs this process started (tests, and a clean shutdown)."""
    for worker in list(_RUNNING):
        worker.join(timeout)
