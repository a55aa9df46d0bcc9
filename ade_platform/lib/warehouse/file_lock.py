"""Who may open a DuckDB file, across processes: the platform's writers first, the gateway's reads between.

DuckDB lets a process open a file for writing only while no other process has it open, and fails at once
otherwise; a read-only open fails the same way while a writer has it. The gateway's reads are short (one
query), Dagster's writes (a dbt build, a dataset load) are long and must never fail because an agent
happened to be querying. So both sides take an advisory lock on a sidecar file (`<file>.ade-lock`) before
they open the database: writers exclusively, waiting for the reads in flight to finish; readers shared,
waiting a bounded time while a writer works. Processes that do not take the lock (a user's own DuckDB
shell) are still handled by the readers' retry on DuckDB's own lock conflict.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

SUFFIX = ".ade-lock"
POLL_SECONDS = 0.01  # a reader polls (flock has no timeout); writers release between transactions


class LockTimeout(Exception):
    """A writer held the file for longer than the reader would wait."""


def lock_path(database: Path) -> Path:
    return database.with_name(database.name + SUFFIX)


@contextlib.contextmanager
def writing(database: Path) -> Iterator[None]:
    """Hold the file for writing: waits until the reads in flight have closed it."""
    with _locked(database, fcntl.LOCK_EX, wait=None):
        yield


@contextlib.contextmanager
def reading(database: Path, wait: float) -> Iterator[None]:
    """Hold the file for one read; LockTimeout when a writer keeps it longer than `wait` seconds."""
    with _locked(database, fcntl.LOCK_SH, wait=wait):
        yield


@contextlib.contextmanager
def _locked(database: Path, mode: int, wait: float | None) -> Iterator[None]:
    path = lock_path(Path(database))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        if wait is None:
            raise
        yield  # a reader that cannot create the sidecar (read-only folder) relies on DuckDB's own lock
        return
    try:
        if wait is None:
            fcntl.flock(fd, mode)
        else:
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, mode | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(f"{database.name} is being written") from None
                    time.sleep(POLL_SECONDS)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
