"""Whether this process can write the store now, so a write that fails is never silent.

Writes that happen in the background (live observations) cannot fail the answer that caused them; the answer
can still say they were not kept. `write_problem(root)` answers before the answer leaves: a probe that costs a
syscall (a local folder this process may not write) and the code of the last write that failed on this root
(cleared by the next one that succeeds). A failure is logged as one line with its code, never a traceback.
No Dagster import.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time

from ade_platform.store.model import StoreError
from ade_platform.store.paths import LocalRoot, StoreRoot

log = logging.getLogger("ade.store")

READ_ONLY = "store_read_only"
FULL = "store_full"
FAILED = "store_write_failed"
_READ_ONLY_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT}
_DENIED = ("AccessDenied", "AllAccessDisabled", "403")
_FAILURES: dict[str, tuple[str, float]] = {}
_GUARD = threading.Lock()
# Log a repeated failure of the same code on the same root at most this often (a busy gateway writes often).
_LOG_EVERY_SECONDS = 60.0
_LOGGED: dict[tuple[str, str], float] = {}


def failure_code(exc: BaseException) -> str:
    """The code of a failed store write: read-only (permissions, a read-only mount, access denied), full, or
    another failure."""
    if isinstance(exc, OSError):
        if exc.errno in _READ_ONLY_ERRNOS:
            return READ_ONLY
        if exc.errno in _FULL_ERRNOS:
            return FULL
    if isinstance(exc, StoreError) and any(mark in exc.detail for mark in _DENIED):
        return READ_ONLY
    return FAILED


def note_failure(root: StoreRoot, exc: BaseException, what: str) -> str:
    """Remember that a write to `root` failed and log it once (per code and minute): code, what, no traceback."""
    code = failure_code(exc)
    now = time.monotonic()
    key = root.describe()
    with _GUARD:
        _FAILURES[key] = (code, time.time())
        last = _LOGGED.get((key, code))
        loud = last is None or now - last >= _LOG_EVERY_SECONDS
        if loud:
            _LOGGED[(key, code)] = now
    if loud:
        reason = exc.detail if isinstance(exc, StoreError) else (exc.strerror or type(exc).__name__)
        log.warning("%s: %s not kept in the store %s: %s", code, what, key, reason)
    return code


def note_success(root: StoreRoot) -> None:
    key = root.describe()
    if key in _FAILURES:
        with _GUARD:
            _FAILURES.pop(key, None)


def write_problem(root: StoreRoot, folder: str = "") -> str | None:
    """The code of why a write to `root` (under `folder`) would not be kept now, else None: a local folder
    this process may not write (one access() call), or the last write to this root that failed."""
    if isinstance(root, LocalRoot):
        target = root.path / folder
        while not target.exists() and target != root.path and target.parent != target:
            target = target.parent  # a folder not created yet: the first existing one decides
        if target.is_dir() and not os.access(target, os.W_OK | os.X_OK):
            return READ_ONLY
    with _GUARD:
        failed = _FAILURES.get(root.describe())
    return failed[0] if failed else None
