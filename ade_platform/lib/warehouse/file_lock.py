"""Who may open a DuckDB file, across processes: the platform's writers first, the gateway's reads between.

DuckDB lets a process open a file for writing only while no other process has it open, and fails at once
otherwise; a read-only open fails the same way while a writer has it. The gateway's reads are short, Dagster's
writes (a dbt build, a dataset load) are long and must never fail because an agent happened to be querying.
So both sides take an advisory lock on a sidecar file (`<file>.ade-lock`) before they open the database:
writers exclusively, waiting for the reads in flight to finish; readers shared, waiting a bounded time while
a writer works.

A reader may keep the file open between calls (attaching it costs more than a small query), so a writer
first announces itself on a second sidecar (`<file>.ade-intent`, held for the whole write): a reader that
sees it gives the file up within moments and starts no new read until the writer is done. Processes that
take neither lock (a user's own DuckDB shell) are still handled by the readers' retry on DuckDB's own lock
conflict.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

SUFFIX = ".ade-lock"
INTENT_SUFFIX = ".ade-intent"
POLL_SECONDS = 0.01  # a reader polls (flock has no timeout); writers release between transactions


class LockTimeout(Exception):
    """A writer held the file for longer than the reader would wait."""


T = TypeVar("T")


def retry_on_lock_conflict(open_database: Callable[[], T], seconds: float) -> T:
    """`open_database()` (a DuckDB connect or ATTACH), tried again while DuckDB refuses it for a lock another
    process holds without taking ours (a user's own DuckDB shell), backing off from 50 ms to 0.5 s; LockTimeout
    after `seconds`. Any other DuckDB error is raised as it is."""
    import duckdb  # the driver loads with the first DuckDB query, not with this module

    deadline = time.monotonic() + seconds
    delay = 0.05
    while True:
        try:
            return open_database()
        except duckdb.Error as exc:
            text = str(exc).lower()
            if not ("lock" in text and ("conflicting" in text or "could not set lock" in text)):
                raise
            if time.monotonic() >= deadline:
                raise LockTimeout("another process holds the DuckDB file's lock") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + SUFFIX)


def intent_path(database: Path) -> Path:
    return database.with_name(database.name + INTENT_SUFFIX)


def _open_sidecar(path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


@contextlib.contextmanager
def writing(database: Path) -> Iterator[None]:
    """Hold the file for writing: announce the write, then wait until the readers have closed the file."""
    database = Path(database)
    intent = _open_sidecar(intent_path(database))
    try:
        fcntl.flock(intent, fcntl.LOCK_EX)  # one writer at a time; readers see it from here on
        lock = _open_sidecar(lock_path(database))
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield
        finally:
            os.close(lock)  # closing the descriptor releases the lock
    finally:
        os.close(intent)


class ReadLease:
    """A shared hold on a DuckDB file for reading, which may outlast one call.

    `cooperative` is False when the sidecars cannot be created (a read-only folder): the lease then holds
    nothing, relying on DuckDB's own lock, and a reader must not keep the file between calls.
    """

    def __init__(self, database: Path) -> None:
        self.database = Path(database)
        self.cooperative = True
        self._lock_fd: int | None = None
        self._intent_fd: int | None = None

    @property
    def held(self) -> bool:
        return self._lock_fd is not None

    def acquire(self, wait: float) -> None:
        """Take the shared lock, waiting while a writer works or waits; LockTimeout after `wait` seconds."""
        if self.held:
            return
        try:
            fd = _open_sidecar(lock_path(self.database))
        except OSError:
            self.cooperative = False
            return
        deadline = time.monotonic() + wait
        try:
            while True:
                if not self.writer_waiting():
                    try:
                        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        pass
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{self.database.name} is being written")
                time.sleep(POLL_SECONDS)
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd

    def release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def writer_waiting(self) -> bool:
        """A writer has announced itself (it is writing, or waiting for the readers to let go)."""
        if self._intent_fd is None:
            try:
                self._intent_fd = _open_sidecar(intent_path(self.database))
            except OSError:
                self.cooperative = False
                return False
        try:
            fcntl.flock(self._intent_fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(self._intent_fd, fcntl.LOCK_UN)
        return False

    def close(self) -> None:
        self.release()
        if self._intent_fd is not None:
            os.close(self._intent_fd)
            self._intent_fd = None
