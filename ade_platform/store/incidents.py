"""The incidents' journal: append-only events under one lock, folded into the current state on read, so every
gateway replica, the Dagster daemon and `ade status` see one list and concurrent writers never lose a
transition (each decides from the state it reads under the lock, then appends).

Layout under the store root (a folder no asset can be named after):

    .incidents/journal.jsonl   one JSON event per line; the first line may be a snapshot {"snapshot": state}
    .incidents/.lock           the writers' lock (flock, across processes; a threading lock within one)

Readers take no lock: appends are single writes of whole lines (a torn last line is skipped until it is whole),
and compaction replaces the file by an atomic rename (a reader holds the old file or the new one, both whole).
Past `max_events` lines the journal is compacted into one snapshot line: closed incidents beyond `max_closed`
go first, oldest first. On an object store (S3) there is no cross-process lock: one writer at a time is assumed
(documented in docs/INCIDENTS.md). No Dagster import here.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

from ade_platform.lib.incidents.model import ACTIVE, IncidentState, fold
from ade_platform.store.locks import store_lock
from ade_platform.store.paths import LocalRoot, StoreRoot

INCIDENTS_DIR = ".incidents"
JOURNAL = f"{INCIDENTS_DIR}/journal.jsonl"
MAX_EVENTS = 5_000
MAX_CLOSED = 1_000


class IncidentJournal:
    def __init__(self, root: StoreRoot, *, max_events: int = MAX_EVENTS, max_closed: int = MAX_CLOSED):
        self.root = root
        self.max_events = max_events
        self.max_closed = max_closed
        self._cache: tuple[Any, IncidentState] | None = None
        self._cache_lock = threading.Lock()

    # ---- reading --------------------------------------------------------------------------------------
    def _raw(self) -> bytes:
        try:
            return self.root.read_bytes(JOURNAL)
        except (FileNotFoundError, NotADirectoryError):
            return b""

    def token(self) -> Any:
        """Changes whenever the journal does (a stat on a local store): what a watcher polls."""
        if isinstance(self.root, LocalRoot):
            try:
                st = os.stat(self.root.path / JOURNAL)
            except FileNotFoundError:
                return None
            return (st.st_ino, st.st_size, st.st_mtime_ns)
        return self._raw()

    def state(self) -> IncidentState:
        """The current state (re-folded only when the journal changed since the last read)."""
        token = self.token()
        with self._cache_lock:
            if self._cache is not None and self._cache[0] == token and token is not None:
                return _copy(self._cache[1])
        state = _parse(self._raw())
        with self._cache_lock:
            self._cache = (token, state)
        return _copy(state)

    # ---- writing --------------------------------------------------------------------------------------
    def change(self, decide: Callable[[IncidentState], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """Under the lock: read the state, let `decide` return new events (without seq), append them. Returns
        the events as written (with seq)."""
        with self._locked():
            state = _parse(self._raw())
            events = decide(_copy(state))
            if not events:
                return []
            seq = state.seq
            written = []
            for event in events:
                seq += 1
                written.append({**event, "seq": seq, "at": event.get("at") or time.time()})
            blob = b"".join(orjson.dumps(e) + b"\n" for e in written)
            self._append(blob)
            if _lines(self._raw()) > self.max_events:
                self._compact(fold(state, written))
            return written

    def _append(self, blob: bytes) -> None:
        if isinstance(self.root, LocalRoot):
            path = self.root.path / JOURNAL
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, blob)  # one write of whole lines: readers see all of it or a torn tail they skip
                os.fsync(fd)
            finally:
                os.close(fd)
        else:
            self.root.write_bytes_atomic(JOURNAL, self._raw() + blob)

    def _compact(self, state: IncidentState) -> None:
        closed = sorted(
            (i for i in state.incidents.values() if i["status"] not in ACTIVE), key=lambda i: i["updated_at"]
        )
        for inc in closed[: max(0, len(closed) - self.max_closed)]:
            del state.incidents[inc["id"]]
        self.root.write_bytes_atomic(JOURNAL, orjson.dumps({"snapshot": state.to_dict()}) + b"\n")

    def _locked(self) -> contextlib.AbstractContextManager[None]:
        return store_lock(self.root, INCIDENTS_DIR)


def _lines(raw: bytes) -> int:
    return raw.count(b"\n")


def _parse(raw: bytes) -> IncidentState:
    state = IncidentState.empty()
    events = []
    for line in raw.split(b"\n"):
        if not line.strip():
            continue
        try:
            item = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue  # a torn tail being written: whole at the next read
        if "snapshot" in item:
            state = IncidentState.from_dict(item["snapshot"])
        elif isinstance(item.get("seq"), int):
            events.append(item)
    return fold(state, events)


def _copy(state: IncidentState) -> IncidentState:
    return IncidentState.from_dict(orjson.loads(orjson.dumps(state.to_dict())))
