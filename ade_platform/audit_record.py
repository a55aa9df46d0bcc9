"""Recording fast-path audit runs into Dagster in batches, without executing anything.

An audit run of a call that already ran needs no execution: it is a run of the tool's one-op job `live__<tool>`
(its job and plan snapshots stored once per tool) with the call's tags, a RUN_START event at the call's start
and a RUN_SUCCESS or RUN_FAILURE event at its end, both stamped with the call's real times. The Dagster UI shows
it like any other run. `execute_in_process` did the same at ~150-300 ms of CPU a run (it builds and runs a job
and captures its logs); writing through the instance's storage costs a fraction of that, and a batch opens the
instance once and looks its run ids up in one query.

Idempotent by run id, so replay is always safe: a run already present and finished is skipped; one present but
not finished (a recorder killed half-way, a gateway killed during an in-line run) is finished with its recorded
outcome, or as a failure tagged `ade/outcome: unknown`, never inserted again.

On SQLite storage every run has an event database of its own, whose creation (tables, migration stamp) is most
of a run's cost: a template created once per recorder is copied instead (the same Dagster version's schema).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("ade.live")
TAG_OUTCOME = "ade/outcome"
OUTCOME_UNKNOWN = "outcome unknown: the gateway stopped before recording it"


@dataclass(frozen=True)
class Audit:
    """One audit run to record (the journal's entry, in the worker's protocol)."""

    tool: str
    run_id: str
    tags: dict[str, str]
    error: str | None  # the failed call's summary (type and code)
    elapsed_ms: float | None  # None: the call's outcome is unknown
    started_at: float = 0.0  # epoch seconds


def job_for(tool: str, body: Any = None) -> Any:
    """The one-op job `live__<tool>` (its op runs `body`, or nothing)."""
    import re

    from dagster import job, op

    op_name = re.sub(r"[^A-Za-z0-9_]", "_", tool)

    @op(name=op_name)
    def live_op() -> None:
        if body is not None:
            body()  # the value stays in this process; nothing is pickled into storage

    @job(name=f"live__{op_name}", description=f"Live MCP tool {tool}, started by an agent.")
    def live_job() -> None:
        live_op()

    return live_job


class Recorder:
    """Records audit runs into one open instance."""

    def __init__(self, instance: Any):
        self.instance = instance
        self._jobs: dict[str, tuple[Any, Any]] = {}
        self._prototypes: dict[str, Any] = {}  # tool -> a run of its job recorded here (its snapshot ids)
        self._template: Path | None = None
        self._template_dir: tempfile.TemporaryDirectory[str] | None = None

    def record(self, audits: Iterable[Audit]) -> dict[str, str | None]:
        """Record each audit run once; returns run id -> None (recorded or already there) or an error code."""
        from dagster import DagsterRunStatus, RunsFilter

        audits = list({a.run_id: a for a in audits}.values())
        outcome: dict[str, str | None] = {}
        existing = {
            r.run_id: r for r in self.instance.get_runs(RunsFilter(run_ids=[a.run_id for a in audits]))
        }
        finished = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
        new: list[Audit] = []
        for audit in audits:
            run = existing.get(audit.run_id)
            if run is None:
                new.append(audit)
                continue
            try:
                if run.status not in finished:
                    self._finish(run, audit)
                outcome[audit.run_id] = None
            except Exception as exc:  # one bad run must not lose the batch's others
                outcome[audit.run_id] = type(exc).__name__
        if new and self._sqlite():
            try:
                self._insert_sqlite(new)
                outcome.update(dict.fromkeys((a.run_id for a in new), None))
                new = []
            except Exception as exc:  # what this batch wrote is replaced by the one-by-one path below
                log.warning(
                    "audit_batch_failed: recording %d runs one by one (%s)", len(new), type(exc).__name__
                )
        for audit in new:
            try:
                self._insert(audit)
                outcome[audit.run_id] = None
            except Exception as exc:
                outcome[audit.run_id] = type(exc).__name__
        return outcome

    def close(self) -> None:
        if self._template_dir is not None:
            self._template_dir.cleanup()

    def _job(self, tool: str) -> tuple[Any, Any]:
        if tool not in self._jobs:
            from dagster._core.execution.api import create_execution_plan

            job = job_for(tool)
            self._jobs[tool] = (job, create_execution_plan(job))
        return self._jobs[tool]

    def _insert(self, audit: Audit) -> Any:
        """One run through the instance's own methods (any storage)."""
        from dagster import DagsterRunStatus

        job, plan = self._job(audit.tool)
        self._prepare_event_shard(audit.run_id)
        run = self.instance.create_run_for_job(
            job,
            execution_plan=plan,
            run_id=audit.run_id,
            tags=audit.tags,
            status=DagsterRunStatus.NOT_STARTED,
        )
        self._prototypes.setdefault(audit.tool, run)
        started = audit.started_at or time.time()
        self._event(run, "RUN_START", f"{audit.tool} started (fast path)", started)
        self._end(run, audit, started)
        return run

    def _finish(self, run: Any, audit: Audit) -> None:
        """A run left unfinished (its recorder or its gateway died): finish it as the journal says."""
        if audit.elapsed_ms is None and run.tags.get(TAG_OUTCOME) != "unknown":
            self.instance.add_run_tags(run.run_id, {TAG_OUTCOME: "unknown"})
        from dagster import DagsterRunStatus

        if run.status in (DagsterRunStatus.NOT_STARTED, DagsterRunStatus.QUEUED, DagsterRunStatus.STARTING):
            self._event(
                run, "RUN_START", f"{audit.tool} started (fast path)", audit.started_at or time.time()
            )
        self._end(run, audit, audit.started_at or time.time())

    def _end(self, run: Any, audit: Audit, started: float) -> None:
        if audit.elapsed_ms is None:
            self._event(run, "RUN_FAILURE", OUTCOME_UNKNOWN, time.time())
            return
        ended = started + audit.elapsed_ms / 1000
        if audit.error is None:
            message = f"{audit.tool} ran in-process in {audit.elapsed_ms:.1f} ms (fast path)"
            self._event(run, "RUN_SUCCESS", message, ended)
        else:
            self._event(run, "RUN_FAILURE", f"{audit.tool} failed: {audit.error}", ended)

    def _event(self, run: Any, kind: str, message: str, at: float) -> None:
        self.instance.report_dagster_event(
            _dagster_event(run.job_name, kind, message), run.run_id, timestamp=at
        )

    # ---- SQLite: a batch in one transaction per database ----------------------------------------------
    def _sqlite(self) -> bool:
        """The default storage (runs.db, an event database per run): written directly, a batch at a time."""
        names = (type(self.instance.run_storage).__name__, type(self.instance.event_log_storage).__name__)
        return names == ("SqliteRunStorage", "SqliteEventLogStorage")

    def _insert_sqlite(self, audits: list[Audit]) -> None:
        """The same rows and events Dagster's methods write for a run that started and finished, with one
        transaction on runs.db and one on the index shard for the whole batch. Each run's own event
        database is written first and the runs.db rows last: a run is present only once complete, and a
        batch interrupted before that is recorded again from scratch on replay."""
        from datetime import UTC, datetime

        from dagster._core.events.log import EventLogEntry
        from dagster._core.storage.runs.schema import RunsTable, RunTagsTable
        from dagster._serdes import serialize_value

        runs_db, events_db = self.instance.run_storage, self.instance.event_log_storage
        for audit in audits:  # a first run of each tool goes the usual way: it stores the job's snapshots
            if audit.tool not in self._prototypes:
                self._insert(audit)
        todo = [a for a in audits if self._prototypes[a.tool].run_id != a.run_id]
        rows, tags, status_events = [], [], []
        for audit in todo:
            final, start, end, events = self._final_run(audit)
            entries = [
                EventLogEntry(
                    user_message="",
                    level=logging.INFO,
                    job_name=final.job_name,
                    run_id=audit.run_id,
                    error_info=None,
                    timestamp=at,
                    step_key=None,
                    dagster_event=event,
                )
                for event, at in events
            ]
            self._write_event_shard(audit.run_id, [events_db._event_to_row(e) for e in entries])
            status_events += entries
            row = {
                "run_id": audit.run_id,
                "pipeline_name": final.job_name,
                "status": final.status.value,
                "run_body": serialize_value(final),
                "snapshot_id": final.job_snapshot_id,
                "partition": None,
                "partition_set": None,
                "create_timestamp": datetime.fromtimestamp(start, UTC).replace(tzinfo=None),
                "update_timestamp": datetime.fromtimestamp(end, UTC).replace(tzinfo=None),
                "start_time": start,
                "end_time": end,
            }
            if self._backfill_column():
                row["backfill_id"] = None
            rows.append(row)
            tags += [
                {"run_id": audit.run_id, "key": k, "value": v} for k, v in final.tags_for_storage().items()
            ]
        if not rows:
            return
        with events_db.index_connection() as conn:  # run status events are mirrored there, as Dagster does
            conn.execute(events_db.prepare_insert_event_batch(status_events))
        with runs_db.connect() as conn:
            conn.execute(RunsTable.insert(), rows)
            if tags:
                conn.execute(RunTagsTable.insert(), tags)

    def _final_run(self, audit: Audit) -> tuple[Any, float, float, list[tuple[Any, float]]]:
        """The finished run of an audit (built from a recorded run of the same job), its start and end, and its
        events with their times."""
        from dagster import DagsterRunStatus

        prototype = self._prototypes[audit.tool]
        start = audit.started_at or time.time()
        if audit.elapsed_ms is None:
            end, kind, message = time.time(), "RUN_FAILURE", OUTCOME_UNKNOWN
        elif audit.error is None:
            end, kind = start + audit.elapsed_ms / 1000, "RUN_SUCCESS"
            message = f"{audit.tool} ran in-process in {audit.elapsed_ms:.1f} ms (fast path)"
        else:
            end, kind, message = (
                start + audit.elapsed_ms / 1000,
                "RUN_FAILURE",
                f"{audit.tool} failed: {audit.error}",
            )
        status = DagsterRunStatus.SUCCESS if kind == "RUN_SUCCESS" else DagsterRunStatus.FAILURE
        final = prototype._replace(run_id=audit.run_id, tags=dict(audit.tags), status=status)
        events = [
            (_dagster_event(final.job_name, "RUN_START", f"{audit.tool} started (fast path)"), start),
            (_dagster_event(final.job_name, kind, message), end),
        ]
        return final, start, end, events

    def _write_event_shard(self, run_id: str, rows: list[dict[str, Any]]) -> None:
        """The run's own event database, complete: the template's copy with its events, written with no
        fsync of SQLite's own (one fsync of the finished file instead of three) and renamed into place."""
        import os
        import sqlite3

        storage = self.instance.event_log_storage
        target = Path(storage.path_for_shard(run_id))
        partial = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(self._template_db(type(storage)), partial)
        columns = list(rows[0])
        connection = sqlite3.connect(partial)
        try:
            connection.execute("PRAGMA synchronous=OFF")
            connection.executemany(
                f"INSERT INTO event_logs ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                [[row[c] for c in columns] for row in rows],
            )
            connection.commit()
        finally:
            connection.close()
        fd = os.open(partial, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        partial.replace(target)
        storage._initialized_dbs.add(run_id)

    def _backfill_column(self) -> bool:
        if not hasattr(self, "_has_backfill"):
            self._has_backfill = bool(self.instance.run_storage.has_backfill_id_column())
        return self._has_backfill

    def _prepare_event_shard(self, run_id: str, fresh: bool = False) -> None:
        """SQLite: the run's event database as a copy of a template (see the module's note); elsewhere
        nothing. Any surprise leaves Dagster to create it as usual."""
        storage = self.instance.event_log_storage
        initialized = getattr(storage, "_initialized_dbs", None)
        path_for = getattr(storage, "path_for_shard", None)
        if type(storage).__name__ != "SqliteEventLogStorage" or initialized is None or path_for is None:
            return
        with contextlib.suppress(Exception):
            target = Path(path_for(run_id))
            if not fresh and (target.exists() or run_id in initialized):
                return
            template = self._template_db(type(storage))
            partial = target.with_name(f".{target.name}.tmp")
            shutil.copyfile(template, partial)
            partial.replace(target)
            initialized.add(run_id)

    def _template_db(self, storage_class: Any) -> Path:
        if self._template is None:
            self._template_dir = tempfile.TemporaryDirectory(prefix="ade-audit-")
            template_storage = storage_class(self._template_dir.name)
            with template_storage.run_connection("template"):
                pass
            template_storage.dispose()
            self._template = Path(template_storage.path_for_shard("template"))
        return self._template


def _dagster_event(job_name: str, kind: str, message: str) -> Any:
    from dagster import DagsterEvent, DagsterEventType

    data = None
    if kind == "RUN_FAILURE":
        from dagster._core.events import JobFailureData

        data = JobFailureData(error=None)
    return DagsterEvent(
        event_type_value=DagsterEventType[kind].value,
        job_name=job_name,
        message=message,
        event_specific_data=data,
    )


def audit_worker_main() -> None:
    """Entry point of the audit child process (`ade_platform.live._AuditProcess`): one JSON batch of audits per
    line on stdin, one reply per line on stdout (run id -> null, or an error code)."""
    import json
    import os
    import signal
    import sys

    # Stop signals sent to the gateway's whole process group (a terminal's Ctrl-C, `ade dev`'s stop) must not
    # kill a batch half-written: the worker ends when the gateway closes its stdin, or exits.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever else prints (Dagster's banners) goes to stderr, never into the replies
    from ade_platform.instance import open_instance

    recorder = Recorder(open_instance(Path(sys.argv[1]), compute_logs=False))
    # Bookkeeping yields the CPU to the gateway (and to Dagster's own runs) on a busy machine; not before it is
    # ready: a niced start-up on a loaded machine left a whole backlog waiting for minutes.
    with contextlib.suppress(OSError):
        os.nice(10)
    for line in sys.stdin:
        batch = [Audit(**item) for item in json.loads(line)]
        try:
            outcome = recorder.record(batch)
        except Exception as exc:  # the instance itself failed: every run of the batch stays journaled
            outcome = dict.fromkeys((a.run_id for a in batch), type(exc).__name__)
        with contextlib.suppress(OSError):  # the gateway has exited: record the rest all the same
            replies.write(json.dumps(outcome) + "\n")
    recorder.close()
