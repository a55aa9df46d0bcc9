"""Everything an incident is judged from: the newest snapshots (indexed once), their history, and what the live
probes just observed. Built by the MCP layer; read by the condition gathering and the symptom."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ade_platform.lib.lineage.conditions import Onset, cache_source
from ade_platform.lib.lineage.history import History, VersionRef
from ade_platform.lib.lineage.tables import SchemaHistory, TableState
from ade_platform.lib.lineage.trace import Health

FAILED_DBT = frozenset({"error", "fail", "runtime error"})
FAILED_RUN = frozenset({"error", "failed", "cancelled", "crashed", "failure"})
STALE = frozenset({"warn", "error", "runtime error"})


@dataclass
class LiveFindings:
    """What the live probes observed (every time an epoch; None/empty where nothing was probed)."""

    now: float
    symptom: dict[str, Any] | None = (
        None  # tile: {status, error, row_count, observed_at, via}; dashboard: +tiles
    )
    tables: dict[str, TableState] = field(default_factory=dict)  # table node -> its live state
    freshness: dict[str, dict[str, Any]] = field(default_factory=dict)  # source node -> live check
    run_results: dict[str, Any] | None = None  # newer than the snapshot: {results: {uid: {status, message}},
    # generated_at, observed_at, path}
    invocation: dict[str, Any] | None = (
        None  # the newest dbt invocation (lib.dbt.invocations), times as epochs
    )
    builders: dict[str, dict[str, Any]] = field(default_factory=dict)  # builder node -> last run, live
    # relation node -> its live profile compared with its baseline (gather_values.Compared)
    values: dict[str, Any] = field(default_factory=dict)
    not_reached: list[dict[str, Any]] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(
        default_factory=list
    )  # probes that could not read: {node, probe, error}
    probes: list[dict[str, Any]] = field(default_factory=list)  # every probe that finished: {probe, node, ms}
    elapsed_ms: float = 0.0


@dataclass
class Records:
    """The snapshot side: health from the newest run-level snapshots, their versions, and their history."""

    health: Health
    history: History
    newest: dict[str, VersionRef]  # asset -> its newest version
    schemas: dict[str, SchemaHistory]  # warehouse name -> its schema history
    table_columns: dict[str, set[str]]  # table node -> columns in the newest schema snapshot
    observations: Any = None  # callable(kind, key) -> [Observation] oldest first, when the store has them

    def ref(self, asset: str) -> VersionRef | None:
        return self.newest.get(asset)


def status_streak(
    records: Records, asset: str, key: str, reduce: Any, holds: Any, fallback_at: float | None
) -> Onset:
    """The onset of a condition read from one asset's history (holds(reduction) per version)."""
    streak = records.history.streak(asset, key, reduce, holds)
    if streak.since is None:
        return Onset(at=fallback_at, origin=asset)
    return Onset(
        at=streak.since.at,
        after=streak.before.at if streak.before else None,
        at_or_before=streak.at_or_before,
        origin=asset,
    )


def run_statuses(data: Any) -> dict[str, str]:
    """unique_id -> lower-cased status of one run_results version."""
    return {
        str(r.get("unique_id")): str(r.get("status") or "").lower() for r in (data or {}).get("results") or []
    }


def freshness_statuses(data: Any) -> dict[str, str]:
    return run_statuses(data)


def drift_severities(data: Any) -> dict[str, str]:
    return {
        str(r.get("unique_id")): str(r.get("severity") or "") for r in (data or {}).get("relations") or []
    }


def tile_statuses(data: Any) -> dict[str, str]:
    """'<dashboard>/<tile>' -> status, and '<dashboard>' -> status, of one bi_health version."""
    out: dict[str, str] = {}
    for dash in (data or {}).get("dashboards") or []:
        out[str(dash.get("id"))] = str(dash.get("status") or "")
        for el in dash.get("elements") or []:
            out[f"{dash.get('id')}/{el.get('id')}"] = str(el.get("status") or "")
    return out


def current_failed_invocation(live: LiveFindings, records: Records) -> dict[str, Any] | None:
    """The newest dbt invocation when it failed and no run results newer than it tell its story: a parse or
    compile error (no artifacts), or a failure newer than every published result."""
    inv = live.invocation
    if not inv or inv.get("status") not in ("error", "parse_error"):
        return None
    finished = inv.get("finished_at") or inv.get("started_at") or 0.0
    ref = records.ref("dbt_run_results")
    if inv.get("invocation_id") and inv["invocation_id"] == (live.run_results or {}).get("invocation_id"):
        return None  # its own run results, read live from the target folder
    if ref is not None and inv.get("invocation_id"):
        # dbt writes run_results.json a moment before its last log lines, so a published snapshot of this very
        # invocation can look a second older than it: the same invocation id says it is this run's story
        published_id = records.history.reduce("dbt_run_results", ref, "invocation_id", _invocation_id)
        if published_id == inv["invocation_id"]:
            return None
    published = max(ref.at if ref else 0.0, (live.run_results or {}).get("generated_at") or 0.0)
    if inv.get("wrote_artifacts") and (live.run_results is not None or finished <= published):
        return None  # its own run results are what the conditions read
    if finished <= published:
        return None  # a later run superseded it
    return inv


def _invocation_id(data: Any) -> str | None:
    return ((data or {}).get("metadata") or {}).get("invocation_id") if isinstance(data, dict) else None


def snapshot_source(records: Records, asset: str, now: float) -> dict[str, Any]:
    """Where evidence read from an asset's newest snapshot came from (asset, version, age)."""
    ref = records.ref(asset)
    if ref is None:
        return {"source": "cache", "asset": asset}
    return cache_source(asset, ref.version, ref.at, now)
