"""Whether a stored dbt artifact is known to be superseded: the cheap signals a cached answer checks.

Three signals, each costing a `stat` or a pointer read when nothing changed, never a parse of an artifact:
- a dbt invocation outside ADE (a terminal, CI, another orchestrator) rewrote an artifact in the watched
  target folder after the snapshot was taken, and it has not been published yet;
- dbt's own log (`<project>/logs/dbt.log`) shows a newer invocation outside ADE that is still running, or that
  failed without leaving this snapshot's successor (a project that no longer parses writes no artifact at all);
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
from ade_platform.lib.dbt.invocations import DbtInvocation, InvocationLog
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
# Which dbt commands rewrite each kind of artifact: the newest of those in dbt's log is the one that matters.
_WRITERS = {
    "run-results": frozenset(
        {"build", "run", "test", "seed", "snapshot", "retry", "clone", "compile", "parse"}
    ),
    "catalog": frozenset({"docs generate"}),
    "sources": frozenset({"source freshness"}),
}
# A failure to parse the project outdates every artifact, whichever command hit it (but these parse nothing).
_PARSE_FREE = frozenset({"deps", "debug", "clean", "init", "docs serve"})
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
            latest: Provenance | None = reader.latest_provenance(ARTIFACT_ASSETS[kind])
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
        invocations: InvocationLog | None = None,
    ):
        self.reader = reader
        self.watched_target = watched_target
        self.invocations = invocations
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

    def invocation(self, kind: str = "run-results") -> DbtInvocation | None:
        """The newest invocation in dbt's log that rewrites `kind` artifacts (or failed to parse the project)."""
        if self.invocations is None:
            return None
        recent = self._cached("log", self.invocations.recent)
        for found in reversed(recent):  # type: ignore[call-overload]
            command = found.command or ""
            if command in _WRITERS[kind] or (found.status == "parse_error" and command not in _PARSE_FREE):
                return found
        return None

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
        reason = self._superseding_invocation(provenance, kind)
        if reason is not None:
            return reason
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

    def related_invocation(
        self, provenance: Provenance, kind: str = "run-results"
    ) -> tuple[DbtInvocation, bool] | None:
        """The newest invocation in dbt's log that rewrites `kind`, when it is this snapshot's own (True) or newer
        than the snapshot's artifact (False); None when the log has nothing newer to say."""
        found = self.invocation(kind)
        if found is None or found.at is None:
            return None
        source = provenance.source or {}
        if found.invocation_id and found.invocation_id == source.get("invocation_id"):
            return found, True
        # The snapshot's artifact time, not its publication: a gateway may publish an old file late.
        written = _timestamp(source.get("generated_at")) or _timestamp(provenance.materialized_at)
        if written is not None and found.at.timestamp() <= written:
            return None
        return found, False

    def _superseding_invocation(self, provenance: Provenance, kind: str) -> str | None:
        """A newer invocation in dbt's log that is running, or failed without replacing this snapshot."""
        related = self.related_invocation(provenance, kind)
        if related is None or related[1] or related[0].status == "success":
            return None
        found = related[0]
        what = f"`dbt {found.command or '?'}` (invocation {str(found.invocation_id)[:8]})"
        if found.status == "running":
            started = _iso(found.at.timestamp())  # type: ignore[union-attr]
            return f"a dbt invocation outside ADE, {what}, started at {started} and is still running"
        how = (
            "failed to parse or compile the project (no node ran)"
            if found.status == "parse_error"
            else "failed"
        )
        if not found.wrote_artifacts:
            how += (
                f" and wrote no {ARTIFACT_FILES['run-results']}"
                if kind == "run-results"
                else " and wrote none"
            )
        finished = _iso(found.finished_at.timestamp()) if found.finished_at else "?"
        error = (found.error or "").strip().split("\n", 1)[0][:200]
        return (
            f"the newest dbt invocation, {what} at {finished}, {how}: {error or 'see dbt.log'}; "
            "this answer is from the artifacts of an earlier run"
        )


def watched_target(target_path: Path | None, project_dir: Path | None) -> Path | None:
    """The folder where dbt runs outside ADE write their artifacts: the configured `dbt.target_path`, else
    the project's own `target/` (ADE's own dbt invocations write under <home>/dbt/ instead; the same rule as
    `Settings.dbt_target_path`)."""
    if target_path is not None:
        return target_path
    return project_dir / "target" if project_dir is not None else None
