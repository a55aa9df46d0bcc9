"""Where received OpenLineage events wait for the `openlineage_events` asset: a bounded journal in the store, and
the JSON-lines files producers write with the client's file transport.

    .openlineage/journal/<received_ns>-<rand>.json     one event per file, written whole (object stores: one PUT)

The journal keeps the newest `max_events` (older files are removed as new ones come, every PRUNE_EVERY appends
and at each read), so it is bounded whatever producers send. Reading files keeps the newest `max_events` valid
lines; a line that is not a valid event is counted, never kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from ade_platform.lib.openlineage.events import OpenLineageError, parse_event
from ade_platform.store.paths import StoreRoot, remove_file

JOURNAL_DIR = ".openlineage/journal"
PRUNE_EVERY = 64
_appends = 0
_guard = threading.Lock()


def append_event(root: StoreRoot, event: dict[str, Any], max_events: int) -> str:
    """Journal one checked event; returns its entry name."""
    global _appends
    name = f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.json"
    root.write_bytes_atomic(f"{JOURNAL_DIR}/{name}", orjson.dumps(event))
    with _guard:
        _appends += 1
        due = _appends % PRUNE_EVERY == 0
    if due:
        prune(root, max_events)
    return name


def _entries(root: StoreRoot) -> list[str]:
    try:
        return sorted(e for e in root.list_dir(JOURNAL_DIR) if e.endswith(".json") and not e.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return []


def prune(root: StoreRoot, max_events: int) -> int:
    """Remove the oldest entries past `max_events`; returns how many went."""
    entries = _entries(root)
    doomed = entries[: max(0, len(entries) - max_events)]
    for name in doomed:
        remove_file(root, f"{JOURNAL_DIR}/{name}")
    return len(doomed)


def read_journal(root: StoreRoot, max_events: int) -> list[dict[str, Any]]:
    """The journal's events, newest `max_events` (each was checked when received)."""
    prune(root, max_events)
    events = []
    for name in _entries(root)[-max_events:]:
        with contextlib.suppress(FileNotFoundError, orjson.JSONDecodeError):
            event = orjson.loads(root.read_bytes(f"{JOURNAL_DIR}/{name}"))
            if isinstance(event, dict):
                events.append(event)
    return events


def _files(paths: Iterable[Path]) -> list[Path]:
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
        elif path.is_file():
            out.append(path)
    return out


def signature(root: StoreRoot, paths: Iterable[Path]) -> str:
    """Changes when an event is journaled or a producer's file grows or is replaced: the newest journal entry
    and the journal's size, and each file's path, size and modification time."""
    entries = _entries(root)
    parts = [f"journal:{len(entries)}:{entries[-1] if entries else ''}"]
    for path in _files(paths):
        with contextlib.suppress(OSError):
            stat = path.stat()
            parts.append(f"{path}:{stat.st_size}:{stat.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:32]


def read_files(
    paths: Iterable[Path], max_events: int, max_event_bytes: int
) -> tuple[list[dict[str, Any]], int]:
    """Events from JSON-lines files and folders of them: (the newest `max_events` valid ones, lines refused)."""
    kept: deque[dict[str, Any]] = deque(maxlen=max_events)
    refused = 0
    for path in _files(paths):
        with open(path, "rb") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                try:
                    kept.append(parse_event(line, max_event_bytes))
                except OpenLineageError:
                    refused += 1
    return list(kept), refused
