"""Live tools run as ad-hoc Dagster ops, so every call an agent makes is a run in Dagster's history.

Each call builds a one-op job named after the tool and executes it in the platform's Dagster instance
(DAGSTER_HOME) with tags that say which tool ran, with which arguments (secrets and SQL literals redacted)
and why (the agent-given cause). Operators find these runs in the Dagster UI under the `ade/tool` tag.

Read-only tools may take the fast path (DESIGN.md "Live tools"): the call runs in the caller's thread and
its audit run — the same job name, tags and run id, plus `ade/path: fast` — is written to Dagster by a
background worker, so the agent does not wait ~0.3-0.6 s of Dagster run bookkeeping per query. A failed
call is recorded as a failed run. `flush()` waits for pending audit runs (called at interpreter exit).

Dagster is imported lazily here: the MCP bridge imports this module only on its first live call.
"""

from __future__ import annotations

import atexit
import json
import queue
import re
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ade_platform.lib.redact import redact_arguments

T = TypeVar("T")
TAG_TOOL = "ade/tool"
TAG_ARGUMENTS = "ade/arguments"
TAG_CAUSE = "ade/cause"
TAG_SOURCE = "ade/source"
TAG_PATH = "ade/path"
_MAX_TAG_CHARS = 2000
_OP_NAME = re.compile(r"[^A-Za-z0-9_]")
# One Dagster execution at a time per process: `execute_in_process` swaps process-global state (log capture,
# signal handlers), so a background audit run concurrent with a foreground run can corrupt it.
_EXECUTION_LOCK = threading.Lock()
_RUNNERS: weakref.WeakSet[LiveRunner] = weakref.WeakSet()
# Dagster's console logger would print every DEBUG event to the server's stderr; the events themselves are
# stored in the run history regardless.
QUIET_CONSOLE: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


@dataclass(frozen=True)
class LiveResult:
    run_id: str
    value: Any
    elapsed_ms: float

    def stamp(self) -> dict[str, Any]:
        """The provenance block of a live answer."""
        return {"source": "live", "run_id": self.run_id, "elapsed_ms": round(self.elapsed_ms, 1)}


class LiveRunner:
    """Runs callables as audited ad-hoc Dagster ops in one Dagster instance."""

    def __init__(self, dagster_home: Path, fast_read_only: bool = True):
        self.dagster_home = Path(dagster_home)
        self.fast_read_only = fast_read_only
        self._instance: Any = None
        self._lock = threading.Lock()
        self._audits: queue.Queue[tuple[str, str, dict[str, str], BaseException | None, float]] = (
            queue.Queue()
        )
        self._auditor: threading.Thread | None = None
        _RUNNERS.add(self)

    def instance(self) -> Any:
        with self._lock:
            if self._instance is None:
                from dagster import DagsterInstance

                self.dagster_home.mkdir(parents=True, exist_ok=True)
                self._instance = DagsterInstance.from_config(str(self.dagster_home))
            return self._instance

    def run(
        self,
        tool: str,
        fn: Callable[[], T],
        *,
        arguments: dict[str, Any] | None = None,
        cause: str | None = None,
        read_only: bool = False,
    ) -> LiveResult:
        """Execute fn as an audited Dagster run; re-raise its exception (the run is recorded as failed).

        read_only=True allows the fast path (when enabled): fn runs here, the audit run follows.
        """
        tags = {
            TAG_TOOL: tool,
            TAG_SOURCE: "mcp",
            TAG_ARGUMENTS: _truncate(json.dumps(redact_arguments(arguments or {}), default=str)),
        }
        if cause:
            tags[TAG_CAUSE] = _truncate(cause)
        if read_only and self.fast_read_only:
            return self._run_fast(tool, fn, tags)
        captured: dict[str, Any] = {}

        def body() -> None:
            try:
                captured["value"] = fn()
            except Exception as exc:
                captured["error"] = exc
                raise

        instance = self.instance()
        started = time.perf_counter()
        with _EXECUTION_LOCK:
            result = self._job(tool, body).execute_in_process(
                instance=instance, tags=tags, raise_on_error=False
            )
        elapsed = (time.perf_counter() - started) * 1000
        if "error" in captured:
            raise captured["error"]
        if not result.success:
            raise RuntimeError(f"live run {result.run_id} of {tool} failed")
        return LiveResult(run_id=result.run_id, value=captured.get("value"), elapsed_ms=elapsed)

    def flush(self, timeout: float = 60) -> None:
        """Wait until every pending fast-path audit run is recorded."""
        deadline = time.time() + timeout
        while self._audits.unfinished_tasks and time.time() < deadline:
            time.sleep(0.05)

    def _run_fast(self, tool: str, fn: Callable[[], T], tags: dict[str, str]) -> LiveResult:
        run_id = str(uuid.uuid4())  # the id Dagster will record, known before the call
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            value = fn()
        except Exception as exc:
            error = exc
        elapsed = (time.perf_counter() - started) * 1000
        self._audits.put((tool, run_id, {**tags, TAG_PATH: "fast"}, error, elapsed))
        self._ensure_auditor()
        if error is not None:
            raise error
        return LiveResult(run_id=run_id, value=value, elapsed_ms=elapsed)

    def _ensure_auditor(self) -> None:
        with self._lock:
            if self._auditor is None:
                self._auditor = threading.Thread(target=self._audit_loop, name="ade-live-audit", daemon=True)
                self._auditor.start()
                atexit.register(self.flush, 30)

    def _audit_loop(self) -> None:
        while True:
            tool, run_id, tags, error, elapsed = self._audits.get()
            try:
                self._record(tool, run_id, tags, error, elapsed)
            except Exception:  # an audit failure must never take the server down; it is logged
                import logging

                logging.getLogger("ade.live").exception("could not record the audit run of %s", tool)
            finally:
                self._audits.task_done()

    def _record(
        self, tool: str, run_id: str, tags: dict[str, str], error: BaseException | None, ms: float
    ) -> None:
        def body() -> None:
            from dagster import get_dagster_logger

            get_dagster_logger().info(f"{tool} ran in-process in {ms:.1f} ms (read-only fast path)")
            if error is not None:
                # The type and stable code only: an error's text may quote values.
                code = getattr(error, "code", None)
                raise RuntimeError(f"{tool} failed: {type(error).__name__}{f' ({code})' if code else ''}")

        instance = self.instance()
        with _EXECUTION_LOCK:
            self._job(tool, body).execute_in_process(
                instance=instance, tags=tags, run_id=run_id, run_config=QUIET_CONSOLE, raise_on_error=False
            )

    @staticmethod
    def _job(tool: str, body: Callable[[], None]) -> Any:
        from dagster import job, op  # lazy: keeps the cached path Dagster-free

        op_name = _OP_NAME.sub("_", tool)

        @op(name=op_name)
        def live_op() -> None:
            body()  # the value stays in this process; nothing is pickled into storage

        @job(name=f"live__{op_name}", description=f"Live MCP tool {tool}, started by an agent.")
        def live_job() -> None:
            live_op()

        return live_job


def flush_all(timeout: float = 60) -> None:
    """Wait for the pending audit runs of every runner in this process (tests call it between tests)."""
    for runner in list(_RUNNERS):
        runner.flush(timeout)


def _truncate(text: str) -> str:
    return text if len(text) <= _MAX_TAG_CHARS else text[: _MAX_TAG_CHARS - 1] + "…"
