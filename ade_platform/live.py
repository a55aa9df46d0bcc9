"""Live tools run as ad-hoc Dagster ops, so every call an agent makes is a run in Dagster's history.

Each call is a run of a one-op job named after the tool in the platform's Dagster instance (DAGSTER_HOME), with
tags that say which tool ran, with which arguments (secrets and SQL literals redacted) and why (the agent-given
cause). Operators find these runs in the Dagster UI under the `ade/tool` tag.

What a call may change decides how it is audited (`LiveRunner.run(effects=...)`, docs/DEVELOPING.md):
- `effects="none"` (read-only tools) and `effects="workspace"` (files in the ADE workspace or its run folders
  only) take the fast path: the call runs in the caller's thread, and its audit run (the same job name, tags
  and run id, plus `ade/path: fast`) is recorded just after the answer by a background worker. The call is in
  the audit journal (`ade_platform/lib/audit_journal.py`, fsynced with group commit) before its answer
  leaves: its outcome after it ran, and for "workspace" also its start before it runs. The worker moves journal
  entries into Dagster in batches (`ade_platform/audit_record.py`) and marks them done.
- `effects="external"` (the default: anything that changes a system outside ADE) runs in-line as a one-op
  Dagster run: the call happens inside the run, which is in the instance before the agent gets an answer; its
  start is journaled too, so a gateway killed during the run leaves no run unfinished.
The journal is replayed when a gateway starts (`recover()`: the entries of gateways that died), when the audit
worker is restarted (its batch is sent again) and on a graceful stop (`close()`: pending entries are recorded,
whatever is left stays for the next start). Recording is idempotent by run id. A call whose start is journaled
but not its outcome is recorded as failed with `ade/outcome: unknown`. A failed call is recorded as a failed run.

The worker hands batches to a child Python process (`audit_worker_main`) that records them in the same
instance, so the CPU of recording never holds this process's GIL against the next calls; if the child cannot be
started or dies twice in a row, the batch is recorded in this process. A journal that cannot be written is
never silent: one log line with a code, and the answer's provenance says `audit_kept: false`.

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
from ade_platform.lib.audit_journal import AuditNotKept
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
_BATCH = 200  # audit runs one batch records at most
_RETRIES = 3  # batches that may fail to record a run before it is left to the next start
_WORKER_TRIES = 2  # child processes a batch is sent to (the second one replays it) before recording it here
# One Dagster execution at a time per process: `execute_in_process` swaps process-global state (log capture,
# signal handlers), so a background audit run concurrent with a foreground run can corrupt it.
_EXECUTION_LOCK = threading.Lock()
_RUNNERS: weakref.WeakSet[LiveRunner] = weakref.WeakSet()
# Dagster's console logger would print every DEBUG event to the server's stderr; the events themselves are
# stored in the run history regardless. CRITICAL, not ERROR: a failed call's step failure would print its stack
# trace (file paths of the install) into the gateway's log, which the MCP host keeps.
QUIET_CONSOLE: dict[str, Any] = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
log = logging.getLogger("ade.live")


@dataclass(frozen=True)
class _Audit:
    """One audit run for the background worker to record."""

    tool: str
    run_id: str
    tags: dict[str, str]
    error: str | None  # `_error_summary` of a failed call
    elapsed_ms: float | None  # None: the call's outcome is unknown (its gateway died during it)
    started_at: float = 0.0  # epoch seconds
    claim: str | None = None  # the claimed journal segment (of a dead gateway) it was replayed from
    attempt: int = 0  # batches that failed to record it so far


@dataclass(frozen=True)
class LiveResult:
    run_id: str
    value: Any
    elapsed_ms: float
    audit_error: str | None = None  # the code of why the call's audit could not be made durable

    def stamp(self) -> dict[str, Any]:
        """The provenance block of a live answer."""
        stamp = {"source": "live", "run_id": self.run_id, "elapsed_ms": round(self.elapsed_ms, 1)}
        if self.audit_error:  # the agent's picture of what is on record depends on it
            stamp.update(audit_kept=False, audit_error=self.audit_error)
        return stamp


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
        self._recorder: Any = None
        self._lock = threading.Lock()
        self._audits: queue.Queue[_Audit] = queue.Queue()
        self._auditor: threading.Thread | None = None
        self._audit_process = _AuditProcess(self.dagster_home)
        self._claims: dict[str, set[str]] = {}  # claimed segment -> its run ids not yet recorded
        self._inflight = 0
        self._idle = threading.Condition()
        self._closed = False
        _RUNNERS.add(self)

    def recover(self) -> int:
        """Queue the journal's orphans (calls of gateways that died before their audit runs were recorded):
        each with its recorded outcome, or as failed with an unknown outcome; returns how many. Called when a
        gateway starts."""
        try:
            orphans = self.journal.claim_orphans()
        except OSError as exc:  # an unreadable journal must not stop live tools; the next start retries
            log.warning("audit_journal_unreadable: could not read the audit journal (%s)", type(exc).__name__)
            return 0
        count = 0
        for entries, claim in orphans:
            with self._lock:
                self._claims[str(claim)] = {e.run_id for e in entries}
            for e in entries:
                tags = dict(e.tags)
                if e.ended:
                    audit = _Audit(e.tool, e.run_id, tags, e.error, e.elapsed_ms, e.started_at, str(claim))
                else:
                    tags[TAG_OUTCOME] = "unknown"
                    audit = _Audit(e.tool, e.run_id, tags, OUTCOME_UNKNOWN, None, e.started_at, str(claim))
                self._audits.put(audit)
                count += 1
        if count:
            self._ensure_auditor()
        return count

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
        the ADE workspace and its run folders only) allow the fast path when enabled: fn runs here, its outcome
        is journaled before the answer, the audit run follows; for "workspace" the start is journaled before
        fn runs. "external" runs fn inside an in-line Dagster run. `dialect`: the warehouse type SQL arguments
        are written for (their literals are stripped by its quoting rules).
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
        with self._idle:
            self._inflight += 1
        try:
            if effects == "none" and self.fast_read_only:
                return self._run_fast(tool, fn, tags, journaled=False)
            if effects == "workspace" and self.fast_workspace:
                return self._run_fast(tool, fn, tags, journaled=True)
            return self._run_inline(tool, fn, tags)
        finally:
            with self._idle:
                self._inflight -= 1
                self._idle.notify_all()

    def flush(self, timeout: float = 300) -> None:
        """Wait until every pending fast-path audit run is recorded (or given up on, left in the journal)."""
        deadline = time.time() + timeout
        while self._audits.unfinished_tasks and time.time() < deadline:
            time.sleep(0.02)

    def close(self, timeout: float = 5, grace: float = 2) -> int:
        """A gateway's stop: wait up to `grace` s for calls under way, record what is pending (up to `timeout`
        s), make the journal durable and stop the audit worker (killed if it is still busy a second later: what
        it was recording stays journaled, and replay finishes it). Returns how many audit runs are left in the
        journal for the next start."""
        if self._closed:
            return 0
        deadline = time.monotonic() + grace
        with self._idle:
            while self._inflight and time.monotonic() < deadline:
                self._idle.wait(deadline - time.monotonic())
        self.flush(timeout)
        self._closed = True  # from here on the worker records nothing more: the journal keeps it
        left = self._audits.unfinished_tasks
        if left:
            log.warning(
                "audit_pending_at_stop: %d audit runs left in the journal; the next gateway records them",
                left,
            )
        with contextlib.suppress(OSError):
            self.journal.close()
        self._audit_process.close(wait=True, timeout=1, final=True)
        return left

    def _run_inline(self, tool: str, fn: Callable[[], T], tags: dict[str, str]) -> LiveResult:
        captured: dict[str, Any] = {}

        def body() -> None:
            try:
                captured["value"] = fn()
            except Exception as exc:
                captured["error"] = exc
                # The run records the error's type and code, as the fast path does: its text may quote values.
                raise RuntimeError(f"{tool} failed: {_error_summary(exc)}") from None

        from ade_platform.audit_record import job_for

        instance = self.instance()
        run_id = str(uuid.uuid4())
        journaled = self._journal(lambda: self.journal.begin(run_id, tool, tags)) is None
        started = time.perf_counter()
        try:
            with _EXECUTION_LOCK:
                result = job_for(tool, body).execute_in_process(
                    instance=instance,
                    tags=tags,
                    run_id=run_id,
                    raise_on_error=False,
                    run_config=QUIET_CONSOLE,
                )
        finally:
            if journaled:
                self.journal.done([run_id])
        elapsed = (time.perf_counter() - started) * 1000
        if "error" in captured:
            raise captured["error"]
        if not result.success:
            raise RuntimeError(f"live run {result.run_id} of {tool} failed")
        return LiveResult(run_id=result.run_id, value=captured.get("value"), elapsed_ms=elapsed)

    def _run_fast(self, tool: str, fn: Callable[[], T], tags: dict[str, str], journaled: bool) -> LiveResult:
        run_id = str(uuid.uuid4())  # the id Dagster will record, known before the call
        tags = {**tags, TAG_PATH: "fast"}
        started_at = time.time()
        problem = (
            self._journal(lambda: self.journal.begin(run_id, tool, tags, started_at)) if journaled else None
        )
        started = time.perf_counter()
        error: BaseException | None = None
        try:
            value = fn()
        except Exception as exc:
            error = exc
        elapsed = (time.perf_counter() - started) * 1000
        summary = None if error is None else _error_summary(error)
        problem = (
            self._journal(
                lambda: self.journal.end(
                    run_id, tool, tags, started_at=started_at, error=summary, elapsed_ms=elapsed
                )
            )
            or problem
        )
        self._audits.put(_Audit(tool, run_id, tags, summary, elapsed, started_at))
        self._ensure_auditor()
        if error is not None:
            raise error
        return LiveResult(run_id=run_id, value=value, elapsed_ms=elapsed, audit_error=problem)

    @staticmethod
    def _journal(write: Callable[[], Any]) -> str | None:
        """Make a journal entry; the code of why it could not be (logged once, without a traceback)."""
        try:
            write()
        except AuditNotKept as exc:
            log.warning("%s: an audited call could not be journaled; its audit run may be lost", exc.code)
            return exc.code
        return None

    def _ensure_auditor(self) -> None:
        with self._lock:
            if self._auditor is None:
                self._auditor = threading.Thread(target=self._audit_loop, name="ade-live-audit", daemon=True)
                self._auditor.start()
                atexit.register(self._shutdown)

    def _shutdown(self) -> None:
        self.close(timeout=30)

    def _audit_loop(self) -> None:
        while True:
            batch = [self._audits.get()]
            with contextlib.suppress(queue.Empty):
                while len(batch) < _BATCH:
                    batch.append(self._audits.get_nowait())
            try:
                self._record_batch(batch)
            except Exception as exc:  # an audit failure must never take the server down; it is logged
                log.warning(
                    "audit_write_failed: %d audit runs not recorded (%s)", len(batch), type(exc).__name__
                )
            finally:
                for _ in batch:
                    self._audits.task_done()

    def _record_batch(self, batch: list[_Audit]) -> None:
        outcomes: dict[str, str | None] | None = None
        for _ in range(_WORKER_TRIES):  # a worker that died mid-batch: the next one replays it
            if self._closed:
                return  # the gateway is stopping: the journal keeps the batch for the next start
            try:
                outcomes = self._audit_process.record(batch)
                break
            except _AuditProcessFailed as exc:
                log.warning(
                    "audit_worker_failed: the audit worker process stopped (%s); replaying its batch", exc
                )
        if outcomes is None:
            if self._closed:
                return
            outcomes = self._recorder_here().record([_recordable(a) for a in batch])
        recorded = [run_id for run_id, problem in outcomes.items() if problem is None]
        failed = {problem for problem in outcomes.values() if problem is not None}
        retry = [a for a in batch if outcomes.get(a.run_id, "missing") is not None and a.attempt < _RETRIES]
        if failed:
            log.warning(
                "audit_write_failed: %d audit runs not recorded (%s); %s",
                len(outcomes) - len(recorded),
                ", ".join(sorted(failed)),
                "trying again" if retry else "kept in the journal for the next start",
            )
        if retry:  # a busy database (SQLite's lock under load): again shortly, before flush() returns
            time.sleep(0.5 * (retry[0].attempt + 1))
            for audit in retry:
                self._audits.put(dataclasses.replace(audit, attempt=audit.attempt + 1))
        self.journal.done(recorded)
        self._settle_claims(batch, set(recorded))

    def _settle_claims(self, batch: list[_Audit], recorded: set[str]) -> None:
        """Drop a replayed segment once every entry of it is recorded."""
        with self._lock:
            for audit in batch:
                if audit.claim and audit.run_id in recorded and audit.claim in self._claims:
                    left = self._claims[audit.claim]
                    left.discard(audit.run_id)
                    if not left:
                        del self._claims[audit.claim]
                        audit_journal.remove(audit.claim)

    def _recorder_here(self) -> Any:
        if self._recorder is None:
            from ade_platform.audit_record import Recorder

            self._recorder = Recorder(self.instance())
        return self._recorder


class _AuditProcessFailed(Exception):
    pass


class _AuditProcess:
    """The child process that records audit runs: one JSON batch per line on its stdin, one reply (run id ->
    null or an error code) per line on its stdout; it exits when its stdin closes (this process exited or
    closed it)."""

    def __init__(self, dagster_home: Path):
        self.dagster_home = dagster_home
        self._proc: subprocess.Popen[str] | None = None
        self._final = False  # closed for good: no worker is started again

    def record(self, batch: list[_Audit]) -> dict[str, str | None]:
        request = [dataclasses.asdict(_recordable(a)) for a in batch]
        proc = self._started()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            reply = proc.stdout.readline()
        except OSError as exc:
            self.close(wait=False)
            raise _AuditProcessFailed(type(exc).__name__) from None
        if not reply:
            self.close(wait=False)
            raise _AuditProcessFailed("the worker exited")
        return json.loads(reply)

    def close(self, wait: bool = True, timeout: float = 10, final: bool = False) -> None:
        """Close the worker's stdin: it finishes its batch, then exits (killed after `timeout` s)."""
        self._final = self._final or final
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            if wait:
                proc.wait(timeout=timeout)
            elif proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()

    def _started(self) -> subprocess.Popen[str]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if self._final:
            raise _AuditProcessFailed("the gateway is stopping")
        package_root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])),
        }
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", "from ade_platform.audit_record import audit_worker_main; audit_worker_main()",
                 str(self.dagster_home)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            )  # fmt: skip
        except OSError as exc:
            raise _AuditProcessFailed(type(exc).__name__) from None
        return self._proc


def _recordable(audit: _Audit) -> Any:
    from ade_platform.audit_record import Audit

    fields = {f.name for f in dataclasses.fields(Audit)}
    return Audit(**{k: v for k, v in dataclasses.asdict(audit).items() if k in fields})


def _error_summary(error: BaseException) -> str:
    """The type and stable code of a failed call: an error's text may quote values."""
    code = getattr(error, "code", None)
    return f"{type(error).__name__}{f' ({code})' if code else ''}"


def flush_all(timeout: float = 60) -> None:
    """Wait for the pending audit runs of every runner in this process (tests call it between tests)."""
    for runner in list(_RUNNERS):
        runner.flush(timeout)


def close_all(timeout: float = 10) -> int:
    """A gateway's stop: close every runner of this process; returns the audit runs left for the next start."""
    return sum(runner.close(timeout) for runner in list(_RUNNERS))


def _truncate(text: str) -> str:
    return text if len(text) <= _MAX_TAG_CHARS else text[: _MAX_TAG_CHARS - 1] + "…"
