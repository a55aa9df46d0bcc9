"""One writer at a time under a folder of the store: threads of this process (a lock per folder and root), and
other processes on a local store (`flock` on `<folder>/.lock`). An object store has no cross-process lock: its
writers are assumed one at a time (docs/INCIDENTS.md, docs/STORE_ASSETS.md)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from ade_platform.store.paths import LocalRoot, StoreRoot

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def store_lock(root: StoreRoot, folder: str) -> Iterator[None]:
    name = f"{root.describe()}|{folder}"
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(name, threading.Lock())
    with lock:
        if not isinstance(root, LocalRoot):
            yield
            return
        import fcntl

        path = root.path / folder
        path.mkdir(parents=True, exist_ok=True)
        fd = os.open(path / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
