"""Whether a stored dbt artifact is known to be superseded: the cheap signals a cached answer checks.

Two signals, both costing a `stat` or a pointer read, never a parse:
- a dbt invocation outside ADE (a terminal, CI, another orchestrator) rewrote an artifact in the watched
  target folder after the snapshot was taken, and it has not been published yet;
- a dbt build of ADE's own (the Dagster op) started after the snapshot and has not published yet (the
  `dbt_invocation` marker the op writes when it starts and when it has published).

Used by the MCP bridge (to set `provenance.stale` and `stale_reason`) and by the Dagster sensor that
publishes what dbt wrote outside ADE. No Dagster import here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ade_platform.lib.dbt.artifacts import ARTIFACT_FILES
from ade_platform.lib.dbt.publish import (
    ARTIFACT_ASSETS,
    INVOCATION_ASSET,
    LINEAGE_INDEX_ASSET,
    SELECT_STAR_ASSET,
    file_signature,
)
from ade_platform.store import CorruptSnapshot, Provenance, SnapshotNotFound, StoreReader

# Which file in a target folder supersedes each stored asset. A dbt invocation that ran nodes writes
# run_results.json and the manifest it ran with; the graph-derived assets follow the manifest.
SUPERSEDED_BY: dict[str, str] = {
    ARTIFACT_ASSETS["run-results"]: "run-results",
    ARTIFACT_ASSETS["manifest"]: "run-results",
    LINEAGE_INDEX_ASSET: "run-results",
    SELECT_STAR_ASSET: "run-results",
    ARTIFACT_ASSETS["catalog"]: "catalog",
    ARTIFACT_ASSETS["sources"]: "sources",
}
# The build op publishes its results after this asset; answers from these wait for it.
_BUILD_OUTPUTS = frozenset(
    {ARTIFACT_ASSETS["run-results"], ARTIFACT_ASSETS["manifest"], LINEAGE_INDEX_ASSET, SELECT_STAR_ASSET}
)


def _timestamp(iso: str | None) -> float | None:
    if not iso:
        return None
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class NewerFile:
    """An artifact file in the watched folder written after the stored snapshot of its kind."""

    kind: str
    signature: list[int]

    @property
    def written_at(self) -> str:
        return _iso(self.signature[0] / 1e9)


def newer_file(target_dir: Path, kind: str, snapshot: Provenance | None) -> NewerFile | None:
    """The `kind` artifact in target_dir when it is newer than `snapshot` (and not the very file published)."""
    signature = file_signature(target_dir / ARTIFACT_FILES[kind])
    if signature is None:
        return None
    if snapshot is None:
        return NewerFile(kind, signature)
    if snapshot.source.get("file_signature") == signature:
        return None
    published = _timestamp(snapshot.materialized_at)
    if published is not None and signature[0] / 1e9 <= published:
        return None
    return NewerFile(kind, signature)


def newer_files(target_dir: Path, reader: StoreReader) -> list[NewerFile]:
    """Every artifact in target_dir newer than the store's latest snapshot of its kind (the sensor's test)."""
    found = []
    for kind in ("run-results", "manifest", "catalog", "sources"):
        try:
            latest: Provenance | None = reader.latest(ARTIFACT_ASSETS[kind]).provenance
        except (SnapshotNotFound, CorruptSnapshot):
            latest = None
        newer = newer_file(target_dir, kind, latest)
        if newer is not None:
            found.append(newer)
    return found


class StalenessDetector:
    """stale_reason(provenance) for cached answers; each signal is re-read at most once per `ttl` seconds."""

    def __init__(
        self,
        reader: StoreReader,
        watched_target: Path | None,
        ttl: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.reader = reader
        self.watched_target = watched_target
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, object]] = {}

    def _cached(self, key: str, read: Callable[[], object]) -> object:
        now = self._clock()
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and now - hit[0] < self.ttl:
                return hit[1]
        value = read()
        with self._lock:
            self._cache[key] = (now, value)
        return value

    def _signature(self, kind: str) -> list[int] | None:
        if self.watched_target is None:
            return None
        path = self.watched_target / ARTIFACT_FILES[kind]
        return self._cached(f"file:{kind}", lambda: file_signature(path))  # type: ignore[return-value]

    def _marker(self) -> dict | None:
        def read() -> dict | None:
            try:
                data = self.reader.latest(INVOCATION_ASSET).data
            except (SnapshotNotFound, CorruptSnapshot):
                return None
            return data if isinstance(data, dict) else None

        return self._cached("marker", read)  # type: ignore[return-value]

    def stale_reason(self, provenance: Provenance) -> str | None:
        kind = SUPERSEDED_BY.get(provenance.asset)
        if kind is None:
            return None
        published = _timestamp(provenance.materialized_at)
        signature = self._signature(kind)
        if (
            signature is not None
            and provenance.source.get("file_signature") != signature
            and (published is None or signature[0] / 1e9 > published)
        ):
            return (
                f"dbt wrote a newer {ARTIFACT_FILES[kind]} in the dbt target folder at "
                f"{_iso(signature[0] / 1e9)} (a dbt run outside ADE, not yet published to the store)"
            )
        if provenance.asset in _BUILD_OUTPUTS:
            marker = self._marker()
            if marker and marker.get("state") == "running":
                started = _timestamp(marker.get("started_at"))
                if started is not None and (published is None or started > published):
                    return (
                        f"a dbt build (Dagster run {str(marker.get('run_id'))[:8]}) started at {_iso(started)} "
                        "and has not published its results yet"
                    )
        return None


def watched_target(target_path: Path | None, project_dir: Path | None) -> Path | None:
    """The folder where dbt runs outside ADE write their artifacts: the configured `dbt.target_path`, else
    the project's own `target/` (ADE's own dbt invocations write under ADE_HOME instead)."""
    if target_path is not None:
        return target_path
    return project_dir / "target" if project_dir is not None else None
