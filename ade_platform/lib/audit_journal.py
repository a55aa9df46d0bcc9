"""A write-ahead journal of audited live calls: the not-yet-recorded tail of the Dagster instance's run history.

Every audited call is appended here before its answer leaves the gateway (and a call that may change something
before it starts), so a call whose answer an agent got is never without its audit run, whatever happens to the
gateway or its audit worker afterwards. The live runner's worker moves entries into Dagster in batches and then
marks them done; replay (`claim_orphans`) hands the entries of a gateway that died to the next one.

Layout: `<dagster_home>/ade-audit-journal/seg-<id>.jlog`, append-only JSON lines, each segment written by one
process only (its first line names the owner: pid, its start time as the kernel counts it, host). Records:
- `b` (begin): run id, tool, redacted tags, start time; written before a call that may change something runs;
- `e` (end): the same plus the outcome (error summary or none) and elapsed ms; self-contained, so a read needs
  only this one record;
- `d` (done): run ids now recorded in Dagster (not fsynced: a lost `d` only makes a replay find the run
  already recorded, which it skips).
Appends are fsynced with group commit: a thread that finds its record already covered by another thread's
fsync returns at once, so concurrent calls share one fsync. A segment whose entries are all done is deleted;
one grown past `segment_bytes` is closed and a new one started. The journal is bounded (`max_bytes` of this
writer's segments): past that, or when the disk refuses a write, `AuditNotKept` says so with a code.

A segment whose owner process is gone (and a claim whose claimer is gone) is an orphan: the next gateway on the
host renames it to its claim (atomic: one claimer wins) and records its pending entries: an ended call with its
outcome, a begun-only call as a failure whose outcome is unknown. Owner pids only mean something on the host
that wrote them, which is why the journal sits in the (host-local) Dagster home. Dagster-free: `os` and `json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

JOURNAL_DIR = "ade-audit-journal"
_SEGMENT = ".jlog"
_CLAIMED = ".claimed-"  # seg-<id>.jlog.claimed-<pid>: an orphan some gateway (pid) is recording
SEGMENT_BYTES = 4 * 1024 * 1024
MAX_BYTES = 64 * 1024 * 1024


class AuditNotKept(Exception):
    """An entry could not be made durable: `code` says why (audit_journal_full, audit_journal_unwritable)."""

    def __init__(self, code: str):
        super().__init__(code)
        self.code = code


@dataclass(frozen=True)
class Entry:
    """One audited call not yet marked done."""

    run_id: str
    tool: str
    tags: dict[str, str]
    started_at: float  # epoch seconds
    ended: bool  # False: only its begin record exists (the outcome is unknown)
    error: str | None = None
    elapsed_ms: float | None = None


@dataclass
class _Segment:
    path: Path
    fd: int
    size: int
    pending: set[str] = field(default_factory=set)
    closed: bool = False


class AuditJournal:
    """The journal of one Dagster home, as written by this process (one writer per segment)."""

    def __init__(self, dagster_home: Path, *, max_bytes: int = MAX_BYTES, segment_bytes: int = SEGMENT_BYTES):
        self.folder = Path(dagster_home) / JOURNAL_DIR
        self.max_bytes = max_bytes
        self.segment_bytes = segment_bytes
        self._lock = threading.Lock()  # appends, segment changes
        self._sync_lock = threading.Lock()  # one fsync at a time; waiting threads are covered by the next
        self._current: _Segment | None = None
        self._older: list[_Segment] = []  # rotated segments with entries not yet done
        self._written = 0  # appends so far (sequence numbers)
        self._synced = 0  # appends known durable

    # ---- writing ---------------------------------------------------------------------------------------
    def begin(self, run_id: str, tool: str, tags: dict[str, str], started_at: float | None = None) -> Path:
        """Durably note a call about to run (one that may change something); returns the segment's path."""
        record = {"k": "b", "id": run_id, "tool": tool, "tags": tags, "t": started_at or time.time()}
        return self._append(record, run_id, sync=True)

    def write(self, run_id: str, tool: str, tags: dict[str, str]) -> Path:
        """`begin` (the name earlier versions used for a journaled intent)."""
        return self.begin(run_id, tool, tags)

    def end(
        self,
        run_id: str,
        tool: str,
        tags: dict[str, str],
        *,
        started_at: float,
        error: str | None,
        elapsed_ms: float,
    ) -> None:
        """Durably note a call's outcome, before its answer leaves."""
        record = {
            "k": "e",
            "id": run_id,
            "tool": tool,
            "tags": tags,
            "t": started_at,
            "ms": round(elapsed_ms, 3),
            "err": error,
        }
        self._append(record, run_id, sync=True)

    def done(self, run_ids: list[str]) -> None:
        """Mark entries recorded in Dagster; drained segments are deleted."""
        if not run_ids:
            return
        drained: list[_Segment] = []
        with self._lock:
            segments = [*self._older, *([self._current] if self._current else [])]
            for segment in segments:
                segment.pending.difference_update(run_ids)
            current = self._current
            if current is not None and not current.pending:
                drained.append(current)
                self._current = None
            elif current is not None:
                with contextlib.suppress(OSError):  # a lost done record only costs a skipped replay
                    line = _line({"k": "d", "ids": run_ids})
                    os.write(current.fd, line)
                    current.size += len(line)
            drained += [s for s in self._older if not s.pending]
            self._older = [s for s in self._older if s.pending]
            for segment in drained:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(segment.path)
        with self._sync_lock:  # no fsync is using them now
            for segment in drained:
                _close(segment)

    def close(self) -> None:
        """Make everything written durable and close this writer's segments (they stay for replay)."""
        self._sync(self._written)
        with self._lock, self._sync_lock:
            for segment in [*self._older, *([self._current] if self._current else [])]:
                _close(segment)
            self._older, self._current = [], None

    def _append(self, record: dict[str, Any], run_id: str, sync: bool) -> Path:
        line = _line(record)
        try:
            with self._lock:
                segment = self._segment_for(len(line))
                os.write(segment.fd, line)  # O_APPEND, one writer: records never interleave
                segment.size += len(line)
                segment.pending.add(run_id)
                self._written += 1
                mine = self._written
            if sync:
                self._sync(mine)
        except OSError:
            raise AuditNotKept("audit_journal_unwritable") from None
        return segment.path

    def _segment_for(self, size: int) -> _Segment:
        """The segment to append `size` bytes to (lock held): rotates a full one; refuses past the bound."""
        current = self._current
        if current is not None and current.size + size > self.segment_bytes:
            os.fsync(current.fd)  # everything in it is durable before appends go elsewhere
            self._older.append(current)
            current = self._current = None
        used = sum(s.size for s in self._older) + (current.size if current else 0)
        if used + size > self.max_bytes:
            raise AuditNotKept("audit_journal_full")
        if current is None:
            current = self._current = self._new_segment()
        return current

    def _new_segment(self) -> _Segment:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.folder / f"seg-{uuid.uuid4().hex}{_SEGMENT}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        owner = {"k": "owner", **_owner(), "t": time.time()}
        line = _line(owner)
        os.write(fd, line)
        os.fsync(fd)
        _fsync_folder(self.folder)  # the segment's name is durable too, not only its content
        return _Segment(path, fd, len(line))

    def _sync(self, mine: int) -> None:
        with self._sync_lock:
            if self._synced >= mine:
                return  # another thread's fsync covered this append
            with self._lock:
                target, segment = self._written, self._current
            if segment is not None and not segment.closed:
                os.fdatasync(segment.fd)
            self._synced = target

    # ---- replay ----------------------------------------------------------------------------------------
    def claim_orphans(self) -> list[tuple[list[Entry], Path]]:
        """Take over the segments of this host whose owner process is gone (and claims whose claimer is gone):
        each is renamed to this process's claim, so two gateways never replay the same one. Returns (pending
        entries, the claim's path) pairs; `remove` the claim once its entries are recorded."""
        if not self.folder.is_dir():
            return []
        host, claimed = socket.gethostname(), []
        for path in sorted(self.folder.iterdir()):
            base, sep, claimer = path.name.partition(_CLAIMED)
            if not base.endswith(_SEGMENT):
                continue
            if sep:
                if claimer.isdigit() and _alive(int(claimer), None):
                    continue
            else:
                owner = _header(path)
                if owner is None:
                    continue  # being created right now, or torn before its owner line: nothing in it
                if owner.get("host") != host or _alive(int(owner.get("pid", 0)), owner.get("start")):
                    continue
            claim = self.folder / f"{base}{_CLAIMED}{os.getpid()}"
            try:
                os.rename(path, claim)  # atomic: one claimer wins
            except FileNotFoundError:
                continue
            entries = read_pending(claim)
            if not entries:
                remove(claim)
                continue
            claimed.append((entries, claim))
        return claimed

    def owned(self) -> bool:
        """Whether this writer has segments open."""
        return self._current is not None or bool(self._older)


def read_pending(path: Path) -> list[Entry]:
    """The entries of one segment not marked done (a torn last line is ignored)."""
    pending: dict[str, Entry] = {}
    try:
        text = path.read_bytes().decode(errors="replace")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        kind = record.get("k") if isinstance(record, dict) else None
        if kind == "d":
            for run_id in record.get("ids") or ():
                pending.pop(run_id, None)
        elif kind in ("b", "e") and isinstance(record.get("id"), str):
            known = pending.get(record["id"])
            if kind == "b" and known is not None and known.ended:
                continue
            pending[record["id"]] = Entry(
                run_id=record["id"],
                tool=str(record.get("tool", "")),
                tags=dict(record.get("tags") or {}),
                started_at=float(record.get("t") or 0),
                ended=kind == "e",
                error=record.get("err"),
                elapsed_ms=record.get("ms"),
            )
    return list(pending.values())


def backlog(dagster_home: Path) -> tuple[int, float | None]:
    """(entries not yet recorded in Dagster, the oldest one's start as epoch seconds) over every segment of
    the journal: this host's gateways, live or gone, and claims being replayed."""
    folder = Path(dagster_home) / JOURNAL_DIR
    if not folder.is_dir():
        return 0, None
    pending = {e.run_id: e for p in folder.iterdir() if _SEGMENT in p.name for e in read_pending(p)}
    oldest = min((e.started_at for e in pending.values()), default=None)
    return len(pending), oldest


def has_orphans(dagster_home: Path) -> bool:
    """Whether the journal holds segments no live process of this host owns (cheap: owner lines only)."""
    folder = Path(dagster_home) / JOURNAL_DIR
    if not folder.is_dir():
        return False
    host = socket.gethostname()
    for path in folder.iterdir():
        base, sep, claimer = path.name.partition(_CLAIMED)
        if not base.endswith(_SEGMENT):
            continue
        if sep:
            if not (claimer.isdigit() and _alive(int(claimer), None)):
                return True
            continue
        owner = _header(path)
        if (
            owner is not None
            and owner.get("host") == host
            and not _alive(int(owner.get("pid", 0)), owner.get("start"))
        ):
            return True
    return False


def remove(path: Path | str | None) -> None:
    """Drop a claim once its entries are recorded."""
    if path:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()


def _close(segment: _Segment) -> None:
    if not segment.closed:
        segment.closed = True
        with contextlib.suppress(OSError):
            os.close(segment.fd)


def _header(path: Path) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            first = handle.readline(4096)
        record = json.loads(first)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("k") == "owner" else None


def _owner() -> dict[str, Any]:
    return {"pid": os.getpid(), "host": socket.gethostname(), "start": _process_start(os.getpid())}


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _process_start(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), where /proc exists."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # fields after the command name start at field 3


def _alive(pid: int, start: str | None) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start is None or _process_start(pid) in (start, None)
