"""A write-ahead journal of live calls whose audit run is recorded after the call (the live runner's fast path).

Before such a call runs, an intent — run id, tool, the call's (already redacted) tags, when it started and which
process owns it — is written to one file and fsynced. The background auditor records the run in Dagster and
then removes the file. A file whose owner process is gone therefore means the gateway stopped between the call
and its record: the next auditor to start on this host records it as a failed run whose outcome is unknown, so
no call that changed the workspace is missing from Dagster's history, even after a crash or a SIGKILL.

The journal lives under the Dagster home: it is the not-yet-recorded tail of that instance's run history, and
it must be replayed into the same instance by a process of the same host (owner pids mean nothing elsewhere).
Dagster-free: plain files, `os` and `json`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import asdict, dataclass
from pathlib import Path

JOURNAL_DIR = "ade-audit-journal"
_INTENT = ".intent.json"
_CLAIMED = ".claimed-"  # <run id>.claimed-<pid>: an orphan some auditor (pid) is recording


@dataclass(frozen=True)
class Intent:
    run_id: str
    tool: str
    tags: dict[str, str]
    started_at: str  # UTC, ISO 8601
    owner_pid: int
    owner_host: str
    owner_start: str | None  # the owner's start time as the kernel counts it: a reused pid is not the owner


class AuditJournal:
    """The intents of one Dagster home (`<dagster_home>/ade-audit-journal/`)."""

    def __init__(self, dagster_home: Path):
        self.folder = Path(dagster_home) / JOURNAL_DIR

    def write(self, run_id: str, tool: str, tags: dict[str, str]) -> Path:
        """Durably record that this process is about to run `tool` as `run_id`; returns the intent's file."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        intent = Intent(
            run_id=run_id,
            tool=tool,
            tags=tags,
            started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            owner_pid=os.getpid(),
            owner_host=socket.gethostname(),
            owner_start=_process_start(os.getpid()),
        )
        path = self.folder / f"{run_id}{_INTENT}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, json.dumps(asdict(intent)).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        _fsync_folder(self.folder)  # the file's name is durable too, not only its content
        return path

    def claim_orphans(self) -> list[tuple[Intent, Path]]:
        """Take over the intents of this host whose owner process is gone (and orphans an auditor that died
        while recording them left claimed); each is renamed to this process's claim, so two auditors never
        record the same one. Returns (intent, path of the claim) pairs."""
        if not self.folder.is_dir():
            return []
        host, claimed = socket.gethostname(), []
        for path in sorted(self.folder.iterdir()):
            run_id, sep, claimer = path.name.partition(_CLAIMED)
            if sep:
                if _alive(int(claimer), None) if claimer.isdigit() else False:
                    continue
            elif not path.name.endswith(_INTENT):
                continue
            else:
                run_id = path.name[: -len(_INTENT)]
            intent = _read(path)
            if intent is None or intent.run_id != run_id or intent.owner_host != host:
                continue
            if not sep and _alive(intent.owner_pid, intent.owner_start):
                continue
            claim = self.folder / f"{run_id}{_CLAIMED}{os.getpid()}"
            try:
                os.rename(path, claim)  # atomic: one auditor wins
            except FileNotFoundError:
                continue
            claimed.append((intent, claim))
        return claimed


def remove(path: Path | str | None) -> None:
    """Drop an intent (or a claim) once its run is recorded."""
    if path:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _read(path: Path) -> Intent | None:
    try:
        data = json.loads(path.read_text())
        return Intent(**data)
    except (OSError, ValueError, TypeError):
        return None  # an intent torn by a crash before its fsync: the call never started


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
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return start is None or _process_start(pid) in (start, None)
