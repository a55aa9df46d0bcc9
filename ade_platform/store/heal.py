"""What a killed writer leaves in the store, recognized and removed.

A version is committed when its provenance.json (the list of its files and their sha256) is there: locally the
whole folder is renamed into place, on object storage provenance.json is the last object PUT. Anything else under
`<asset>/versions/` is a publication in flight or the leftover of a writer that died: a ".tmp" folder (local) or a
version without provenance.json (object storage, fsspec roots). Readers never list those; the next publish of the
asset and `ade store fsck --repair` remove the abandoned ones. An entry is abandoned when the process that wrote
it (recorded in its name or object metadata) is gone on this host, or when it is older than the grace period (a
writer on another host, or one that recorded nothing). No Dagster import.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from ade_platform.store.layout import VERSIONS_DIR
from ade_platform.store.paths import StoreRoot, writer_id

log = logging.getLogger("ade.store")

# No publication takes this long: an unfinished version older than this is abandoned whoever wrote it.
GRACE_SECONDS = 3600.0


@dataclass(frozen=True)
class Leftover:
    """An uncommitted entry under an asset's versions folder."""

    asset: str
    entry: str
    writer: str | None  # "<host>:<pid>" when the backend recorded it
    age_seconds: float | None
    abandoned: bool
    why: str

    def to_dict(self) -> dict[str, object]:
        return {
            "asset": self.asset,
            "entry": self.entry,
            "writer": self.writer,
            "age_seconds": None if self.age_seconds is None else round(self.age_seconds, 1),
            "abandoned": self.abandoned,
            "why": self.why,
        }


def version_time(entry: str) -> float | None:
    """When a version's publication began: its name starts with the nanoseconds since the epoch."""
    head = entry.lstrip(".").split("-", 1)[0].split(".", 1)[0]
    return int(head) / 1e9 if len(head) == 20 and head.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def _judge(writer: str | None, age: float | None, grace: float) -> tuple[bool, str]:
    if writer:
        host, _, pid = writer.rpartition(":")
        if host == writer_id().rpartition(":")[0] and pid.isdigit() and not _alive(int(pid)):
            return True, f"its writer ({writer}) is gone"
    if age is not None and age > grace:
        return True, f"unfinished for longer than the grace period ({grace:g} s)"
    return False, f"being written by {writer}" if writer else "younger than the grace period"


def leftovers(
    root: StoreRoot,
    asset: str,
    *,
    grace: float = GRACE_SECONDS,
    entries: dict[str, bool] | None = None,
    now: float | None = None,
) -> list[Leftover]:
    """The uncommitted entries of an asset's versions folder, each judged abandoned or in flight."""
    folder = f"{asset}/{VERSIONS_DIR}"
    entries = root.version_entries(folder) if entries is None else entries
    now = time.time() if now is None else now
    found = []
    for entry, committed in entries.items():
        if committed:
            continue
        rel = f"{folder}/{entry}"
        writer = root.writer_of(rel)
        born = version_time(entry) or root.mtime(rel)
        age = max(0.0, now - born) if born is not None else None
        abandoned, why = _judge(writer, age, grace)
        found.append(Leftover(asset, entry, writer, age, abandoned, why))
    return found


def remove_leftovers(
    root: StoreRoot, asset: str, *, grace: float = GRACE_SECONDS, entries: dict[str, bool] | None = None
) -> list[Leftover]:
    """Remove the abandoned uncommitted entries of an asset (one log line each); returns what went."""
    removed = []
    for leftover in leftovers(root, asset, grace=grace, entries=entries):
        if not leftover.abandoned:
            continue
        root.remove_tree(f"{asset}/{VERSIONS_DIR}/{leftover.entry}")
        log.info("store_leftover_removed: %s/%s/%s (%s)", asset, VERSIONS_DIR, leftover.entry, leftover.why)
        removed.append(leftover)
    return removed
