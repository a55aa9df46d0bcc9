"""Live tools run as ad-hoc Dagster ops, so every call an agent makes is a run in Dagster's history.

Each call builds a one-op job named after the tool and executes it in the platform's Dagster instance
(DAGSTER_HOME) with tags that say which tool ran, with which arguments (secrets and SQL literals redacted)
and why (the agent-given cause). Operators find these runs in the Dagster UI under the `ade/tool` tag.

What a call may change decides how it is audited (`LiveRunner.run(effects=...)`):
- `effects="none"` (read-only tools) may take the fast path (DESIGN.md "Live
  tools"): the call runs in the caller's thread and its audit run — the same job name, tags and run id, plus
  `ade/path: fast` — is written to Dagster by a background worker, so the agent does not wait ~0.3-1 s of
  Dagster run bookkeeping per query.
- `effects="workspace"` (calls whose only effects are files in the ADE workspace or its run folders, such
  as a Snowfakery run without a database URL) take the same fast path, made durable: before the call runs,
  an intent (run id, tool, redacted tags, owner pid) is fsynced to the audit journal
  (`ade_platform/lib/audit_journal.py`, under the Dagster home); the worker removes it once the run is
  recorded. If the gateway dies in between, the next runner to start on this host records the run as failed
  with `ade/outcome: unknown` ("outcome unknown: the gateway stopped before recording it").
- `effects="external"` (the default: anything that changes a system outside ADE) runs in-line as a one-op
  Dagster run: the call happens inside the run, which is in the instance before the agent gets an answer.
A failed call is recorded as a failed run. `flush()` waits for pending audit runs (called at interpreter
exit). The worker hands each audit run to a child Python process (`_audit_worker_main`) that executes it in
the same instance: a run costs ~150 ms of CPU, which in this process would hold the GIL against the next
calls. If the child cannot be started or dies, the run is recorded in this process instead.

Dagster is imported lazily here: the MCP bridge imports this module only on its first live call.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import os
import queue
import re
import subprocess
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from ade_platform.lib import audit_journal
from ade_platform.lib.caller import current_caller
from ade_platform.lib.redact import Scrub, redact_arguments, redact_text

T = TypeVar("T")
TAG_TOOL = "ade/tool"
TAG_ARGUMENTS = "ade/arguments"
TAG_CAUSE = "ade/cause"
TAG_SOURCE = "ade/source"
TAG_PATH = "ade/path"
TAG_OUTCOME = "ade/outcome"
TAG_USER = "ade/user"  # who called: the signed-in subject, or the local OS user (stdio)
TAG_CLIENT = "ade/client"  # through which OAuth client (MCP host, agent), or "local"
OUTCOME_UNKNOWN = "outcome unknown: the gateway stopped before recording it"
Effects = Literal["none", "workspace", "external"]
_MAX_TAG_CHARS = 2000
_OP_NAME = re.compile(r"[^A-Za-z0-9_]")
# One Dagster execution at a time per process: `execute_in_process` swaps process-global state (log capture,
# signal handlers), so a background audit run concurrent with a foreground run can corrupt it.
_EXECUTION_LOCK = threading.Lock()
_RUNNERS: weakref.WeakSet[LiveRunner] = weakref.WeakSet()
# Dagster's console logger would print every DEBUG event to the server's stderr; the events themselves are
# stored in the run history regardless. CRITICAL, not ERROR: a failed call's step failure would print its stack
# trace (file paths of the install) into the gateway's log, which the MCP host keeps.
QUIET_CONSOLE: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


@dataclass(frozen=True)
class _Audit:
    """One audit run for the background worker to record."""

    tool: str
    run_id: str
    tags: dict[str, str]
    error: str | None  # `_error_summary` of a failed call
    elapsed_ms: float | None  # None: the call's outcome is unknown (recovered from the journal)
    intent: str | None = None  # the journal file to remove once the run is recorded


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

    def __init__(
        self,
        dagster_home: Path,
        fast_read_only: bool = True,
        fast_workspace: bool = True,
        scrub: Scrub | None = None,
    ):
        """`scrub`: the configured secrets' scrubber (ade_platform.lib.secrets), applied to every tag."""
        self.dagster_home = Path(dagster_home)
        self.scrub = scrub
        self.fast_read_only = fast_read_only
        self.fast_workspace = fast_workspace
        self.journal = audit_journal.AuditJournal(self.dagster_home)
        self._instance: Any = None
        self._lock = threading.Lock()
        self._audits: queue.Queue[_Audit] = queue.Queue()
        self._auditor: threading.Thread | None = None
        self._audit_process = _AuditProcess(self.dagster_home)
        self._closing = False
        _RUNNERS.add(self)

    def recover(self) -> int:
        """Queue the journal's orphans (calls of gateways that died before their audit run was recorded) as
        failed runs with an unknown outcome; returns how many. Called when a gateway's runner starts."""
        try:
            orphans = self.journal.claim_orphans()
        except OSError as exc:  # an unreadable journal must not stop live tools; the next start retries
            logging.getLogger("ade.live").warning("could not read the audit journal (%s)", type(exc).__name__)
            return 0
        for intent, claim in orphans:
            tags = {**intent.tags, TAG_PATH: "fast", TAG_OUTCOME: "unknown"}
            self._audits.put(_Audit(intent.tool, intent.run_id, tags, OUTCOME_UNKNOWN, None, str(claim)))
        if orphans:
            self._ensure_auditor()
        return len(orphans)

    def instance(self) -> Any:
        with self._lock:
            if self._instance is None:
                from ade_platform.instance import open_instance

                self._instance = open_instance(self.dagster_home, compute_logs=False)
            return self._instance

    def run(
        self,
        tool: str,
        fn: Callable[[], T],
        *,
        arguments: dict[str, Any] | None = None,
        cause: str | None = None,
        effects: Effects = "external",
        dialect: str | None = None,
    ) -> LiveResult:
        """Execute fn as an audited Dagster run; re-raise its exception (the run is recorded as failed).

        `effects` is what fn may change: "none" (read-only) and "workspace" (files in
        the ADE workspace and its run folders only) allow the fast path when enabled: fn runs here, the audit
        run follows; for "workspace" an fsynced journal intent precedes the call. "external" runs fn inside
        an in-line Dagster run. `dialect`: the warehouse type SQL arguments are written for (their literals
        are stripped by its quoting rules).
        """
        redacted = redact_arguments(arguments or {}, scrub=self.scrub, dialect=dialect)
        caller = current_caller()  # the call's own (a context variable), never another request's
        tags = {
            TAG_TOOL: tool,
            TAG_SOURCE: "mcp",
            TAG_USER: caller.user,
            TAG_CLIENT: caller.client,
            TAG_ARGUMENTS: _truncate(json.dumps(redacted, default=str)),
        }
        if cause:
            tags[TAG_CAUSE] = _truncate(redact_text(cause, self.scrub))
        if effects == "none" and self.fast_read_only:
            return self._run_fast(tool, fn, tags, journaled=False)
        if effects == "workspace" and self.fast_workspace:
            return self._run_fast(tool, fn, tags, journaled=True)
        captured: dict[str, Any] = {}

        def body() -> None:
            try:
                captured["value"] = fn()
            except Exception as exc:
                captured["error"] = exc
                # The run records the error's type and code, as the fast path does: its text may quote values.
                raise RuntimeError(f"{tool} failed: {_error_summary(exc)}") from None

        instance = self.instance()
        started = time.perf_counter()
        with _EXECUTION_LOCK:
            result = self._job(tool, body).execute_in_process(
                instance=instance, tags=tags, raise_on_error=False, run_config=QUIET_CONSOLE
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

    def _run_fast(self, tool: str, fn: Callable[[], T], tags: dict[str, str], journaled: bool) -> LiveResult:
        run_id = str(uuid.uuid4())  # the id Dagster will record, known before the call
        tags = {**tags, TAG_PATH: "fast"}
        intent = str(self.journal.write(run_id, tool, tags)) if journaled else None
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            value = fn()
        except Exception as exc:
            error = exc
        elapsed = (time.perf_counter() - started) * 1000
        summary = None if error is None else _error_summary(error)
        self._audits.put(_Audit(tool, run_id, tags, summary, elapsed, intent))
        self._ensure_auditor()
        if error is not None:
            raise error
        return LiveResult(run_id=run_id, value=value, elapsed_ms=elapsed)

    def _ensure_auditor(self) -> None:
        with self._lock:
            if self._auditor is None:
                self._auditor = threading.Thread(target=self._audit_loop, name="ade-live-audit", daemon=True)
                self._auditor.start()
                atexit.register(self._shutdown)

    def _shutdown(self) -> None:
        self._closing = True
        self.flush(30)
        if self._audits.unfinished_tasks:
            logging.getLogger("ade.live").warning(
                "%d audit runs were still pending at exit", self._audits.unfinished_tasks
            )
        self._audit_process.close(wait=False)

    def _audit_loop(self) -> None:
        log = logging.getLogger("ade.live")
        while True:
            audit = self._audits.get()
            try:
                try:
                    self._audit_process.record(audit)
                except _AuditProcessFailed as exc:
                    if self._closing:
                        continue  # the journal keeps what a journaled call needs for the next start
                    log.warning("audit worker process unavailable (%s); recording in-process", exc)
                    self._record(audit)
            except Exception:  # an audit failure must never take the server down; it is logged
                log.exception("could not record the audit run of %s", audit.tool)
            finally:
                self._audits.task_done()

    def _record(self, audit: _Audit) -> None:
        """Write the audit run of a fast-path call (or of an orphaned intent), then drop its journal file."""
        tool, error, ms = audit.tool, audit.error, audit.elapsed_ms

        def body() -> None:
            from dagster import get_dagster_logger

            if ms is not None:
                get_dagster_logger().info(f"{tool} ran in-process in {ms:.1f} ms (fast path)")
            if error is not None:
                raise RuntimeError(error if ms is None else f"{tool} failed: {error}")

        instance = self.instance()
        # an orphan whose run was recorded just before its gateway died (before the intent was dropped)
        if audit.elapsed_ms is not None or instance.get_run_by_id(audit.run_id) is None:
            with _EXECUTION_LOCK:
                self._job(tool, body).execute_in_process(
                    instance=instance,
                    tags=audit.tags,
                    run_id=audit.run_id,
                    run_config=QUIET_CONSOLE,
                    raise_on_error=False,
                )
        audit_journal.remove(audit.intent)

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


class _AuditProcessFailed(Exception):
    pass


class _AuditProcess:
    """The child process that records audit runs: one JSON request per line on its stdin, one reply per line
    on its stdout; it exits when its stdin closes (this process exited or closed it)."""

    def __init__(self, dagster_home: Path):
        self.dagster_home = dagster_home
        self._proc: subprocess.Popen[str] | None = None

    def record(self, audit: _Audit) -> None:
        request = dataclasses.asdict(audit)
        proc = self._started()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            reply = proc.stdout.readline()
        except OSError as exc:
            self.close()
            raise _AuditProcessFailed(type(exc).__name__) from None
        if not reply:
            self.close()
            raise _AuditProcessFailed("the worker exited")
        outcome = json.loads(reply)
        if not outcome.get("ok"):
            raise RuntimeError(f"the audit worker could not record the run: {outcome.get('error')}")

    def close(self, wait: bool = True) -> None:
        """Close the worker's stdin: it records what it has received, then exits."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            if wait:
                proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()

    def _started(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        package_root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
        }
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", "from ade_platform.live import _audit_worker_main; _audit_worker_main()",
                 str(self.dagster_home)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            )  # fmt: skip
        except OSError as exc:
            raise _AuditProcessFailed(type(exc).__name__) from None
        return self._proc


def _audit_worker_main() -> None:
    """Entry point of the audit child process (see `_AuditProcess`)."""
    # Bookkeeping yields the CPU to the gateway (and to Dagster's own runs) on a busy machine.
    with contextlib.suppress(OSError):
        os.nice(10)
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever else prints (Dagster's banners) goes to stderr, never into the replies
    runner = LiveRunner(Path(sys.argv[1]), fast_read_only=False)

    def reply(outcome: dict[str, Any]) -> None:
        with contextlib.suppress(OSError):  # the gateway has exited: record the rest all the same
            replies.write(json.dumps(outcome) + "\n")

    for line in sys.stdin:
        request = json.loads(line)
        try:
            runner._record(_Audit(**request))
            reply({"ok": True})
        except Exception as exc:
            reply({"ok": False, "error": type(exc).__name__})


def _error_summary(error: BaseException) -> str:
    """The type and stable code of a failed call: an error's text may quote values."""
    code = getattr(error, "code", None)
    return f"{type(error).__name__}{f' ({code})' if code else ''}"


def flush_all(timeout: float = 60) -> None:
    """Wait for the pending audit runs of every runner in this process (tests call it between tests)."""
    for runner in list(_RUNNERS):
        runner.flush(timeout)


def _truncate(text: str) -> str:
    return text if len(text) <= _MAX_TAG_CHARS else text[: _MAX_TAG_CHARS - 1] + "…"
