"""OpenLineage in and out (docs/OPENLINEAGE.md): events checked (events.py), dataset names read as relations
(naming.py), the store's journal and producers' files (journal.py), folded per job (compact.py); ADE's knowledge
as events (emit.py), checked against the client's own models (conform.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ade_platform.config import OpenLineageReceive
from ade_platform.lib.openlineage.compact import fold
from ade_platform.lib.openlineage.events import OpenLineageError, check_event, parse_event
from ade_platform.lib.openlineage.journal import append_event, read_files, read_journal
from ade_platform.store.paths import StoreRoot

__all__ = ["OpenLineageError", "append_event", "check_event", "collect", "collect_received", "parse_event"]


def collect(
    root: StoreRoot,
    files: list[Path],
    *,
    max_events: int,
    max_event_bytes: int,
    max_jobs: int,
    max_runs: int,
) -> dict[str, Any]:
    """The `openlineage_events` snapshot: the journal's events and the files' folded per job."""
    journaled = read_journal(root, max_events)
    from_files, refused = read_files(files, max_events, max_event_bytes)
    snapshot = fold([*journaled, *from_files], max_jobs=max_jobs, max_runs=max_runs)
    snapshot["stats"].update(journal=len(journaled), files=len(from_files), refused_lines=refused)
    return snapshot


def collect_received(root: StoreRoot, receive: OpenLineageReceive) -> dict[str, Any]:
    """`collect` with the bounds and files of `openlineage.receive`."""
    return collect(
        root,
        list(receive.files),
        max_events=receive.max_journal_events,
        max_event_bytes=receive.max_event_bytes,
        max_jobs=receive.max_jobs,
        max_runs=receive.max_runs_per_job,
    )
