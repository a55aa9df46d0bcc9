"""The symptom as it is now, and its own onset: when it started failing, and when it was last seen healthy.

The state comes from the live probe where there is one (a tile run now, a table read now, the newest run results,
a job's last run), else from the newest snapshot. The onset comes from the start's own records: the BI health
snapshots and the live observations of a tile, the run results of a model, the freshness of a source, the runs of
a job. `healthy_at` (the newest record, before now, of a healthy state) is what makes a condition background: one
that already held then did not break it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ade_platform.lib.lineage.conditions import cache_source, epoch_of, iso, live_source
from ade_platform.lib.lineage.error_shapes import ErrorShape, parse_error
from ade_platform.lib.lineage.evidence import (
    FAILED_DBT,
    FAILED_RUN,
    STALE,
    LiveFindings,
    Records,
    current_failed_invocation,
    freshness_statuses,
    run_statuses,
    tile_statuses,
)

Point = tuple[float, bool]  # (when, healthy)


@dataclass
class Symptom:
    node: str
    name: str | None
    kind: str | None
    system: str | None
    status: str  # error | empty | failed | missing | stale | ok | unknown
    error: str | None
    shapes: list[ErrorShape]
    observed: dict[str, Any]
    failing_since: float | None = None
    healthy_at: float | None = None
    tiles: list[dict[str, Any]] = field(default_factory=list)
    relation: str | None = None

    @property
    def failing(self) -> bool:
        return self.status not in ("ok", "unknown")

    def as_dict(self) -> dict[str, Any]:
        shape = self.shapes[0] if self.shapes else None
        out: dict[str, Any] = {
            "node": self.node,
            "name": self.name,
            "kind": self.kind,
            "system": self.system,
            "status": self.status,
            "error": self.error,
            "error_kind": shape.kind if shape else None,
            "columns": sorted({c for s in self.shapes for c in s.columns}),
            "relations": sorted({r for s in self.shapes for r in s.relations}),
            "observed": self.observed,
            "onset": {"failing_since": iso(self.failing_since), "last_healthy_at": iso(self.healthy_at)},
        }
        if self.tiles:
            out["tiles"] = self.tiles
        return out


def _onset(points: list[Point], failing: bool, now_at: float | None) -> tuple[float | None, float | None]:
    """(failing_since, healthy_at) from the start's records (oldest first) and its state now."""
    points = sorted(points)
    if not failing:
        healthy = [at for at, ok in points if ok]
        return None, healthy[-1] if healthy else now_at
    since = now_at
    for at, ok in reversed(points):
        if ok:
            return since, at
        since = at
    return since, None


def _points(records: Records, asset: str, reduce: Callable[[Any], dict[str, str]], key: str, good: set[str]):
    out: list[Point] = []
    for ref in records.history.versions(asset):
        status = records.history.reduce(asset, ref, "statuses", reduce).get(key)
        if status:
            out.append((ref.at, status in good))
    return out


def _observed_points(records: Records, kind: str, key: str, good: set[str]) -> list[Point]:
    if records.observations is None:
        return []
    return [
        (o.observed_at, str((o.state or {}).get("status")) in good)
        for o in records.observations(kind, key)
        if (o.state or {}).get("status")
    ]


def symptom_of(start: str, v: dict[str, Any], records: Records, live: LiveFindings) -> Symptom:
    node = v["nodes"][start]
    kind, system = node.get("kind"), node.get("system")
    base = {"node": start, "name": node.get("name"), "kind": kind, "system": system}
    if kind in ("tile", "dashboard"):
        return _bi(node, base, records, live)
    if system == "dbt":
        return _dbt(node, base, records, live)
    if system == "warehouse":
        return _table(start, node, base, v, records, live)
    if kind in ("job", "dag", "deployment"):
        return _job(start, base, records, live)
    return Symptom(**base, status="unknown", error=None, shapes=[], observed={"source": "none"})


def _bi(node: dict[str, Any], base: dict[str, Any], records: Records, live: LiveFindings) -> Symptom:
    tool = node.get("system") or ""
    asset = f"bi_health_{tool}"
    dash = str(node.get("dashboard_id"))
    is_tile = node.get("kind") == "tile"
    key = f"{dash}/{node.get('tile_id')}" if is_tile else dash
    probe = live.symptom
    tiles: list[dict[str, Any]] = []
    if probe is not None:
        status, error = probe.get("status") or "unknown", probe.get("error")
        tiles = list(probe.get("tiles") or [])
        observed = {**live_source(probe["observed_at"]), "via": probe.get("via", "bi_run")}
        now_at: float | None = probe["observed_at"]
    else:
        h = records.health.of(node) or {}
        status, error = str(h.get("status") or "unknown"), h.get("error")
        ref = records.ref(asset)
        observed = cache_source(asset, ref.version, ref.at, live.now) if ref else {"source": "none"}
        now_at = None
        seen = _newest_observation(records, node) if is_tile else None
        if seen is not None and (ref is None or seen.observed_at > ref.at):  # newer than the snapshot
            status, error = str(seen.state.get("status") or "unknown"), seen.state.get("error")
            observed = {"source": "observation", "observed_at": iso(seen.observed_at), "by": seen.source}
        if not is_tile:
            tiles = [
                {
                    "tile": t.get("id"),
                    "name": t.get("title"),
                    "status": t.get("status"),
                    "error": t.get("error"),
                }
                for t in (records.health.dashboards.get((tool, dash)) or {}).get("elements") or []
                if t.get("status") in ("error", "empty")
            ]
    if status == "ok" and not is_tile and any(t.get("status") == "error" for t in tiles):
        status = "error"
    shapes = [s for s in (parse_error(error, status),) if s] if is_tile else []
    for t in tiles:
        shape = parse_error(t.get("error"), t.get("status"))
        if shape is not None and t.get("status") in ("error", "empty"):
            shapes.append(shape)
    points = _points(records, asset, tile_statuses, key, {"ok"})
    if is_tile:
        points += _observed_points(
            records, "bi_tile_health", f"{tool}:dashboard/{dash}/tile/{node.get('tile_id')}", {"ok"}
        )
    failing = status in ("error", "empty")
    since, healthy = _onset(points, failing, now_at)
    return Symptom(
        **base,
        status=status,
        error=error,
        shapes=shapes,
        observed=observed,
        failing_since=since,
        healthy_at=healthy,
        tiles=tiles,
    )


def _newest_observation(records: Records, node: dict[str, Any]) -> Any:
    if records.observations is None:
        return None
    key = f"{node.get('system')}:dashboard/{node.get('dashboard_id')}/tile/{node.get('tile_id')}"
    found = records.observations("bi_tile_health", key)
    return found[-1] if found else None


def _newest_result(
    uid: str, records: Records, live: LiveFindings
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    newer = (live.run_results or {}).get("results") or {}
    if uid in newer:
        run = live.run_results or {}
        return newer[uid], live_source(run.get("observed_at") or live.now)
    ref = records.ref("dbt_run_results")
    source = cache_source("dbt_run_results", ref.version, ref.at, live.now) if ref else {"source": "none"}
    return records.health.results.get(uid), source


def _dbt(node: dict[str, Any], base: dict[str, Any], records: Records, live: LiveFindings) -> Symptom:
    uid = node.get("unique_id") or ""
    if node.get("kind") == "source":
        fresh = live.freshness.get(base["node"])
        if fresh is not None and fresh.get("status"):
            status_word, observed, now_at = (
                fresh["status"],
                live_source(fresh["observed_at"]),
                fresh["observed_at"],
            )
        else:
            snap = records.health.freshness.get(uid) or {}
            status_word, now_at = str(snap.get("status") or "unknown").lower(), None
            ref = records.ref("dbt_sources")
            observed = (
                cache_source("dbt_sources", ref.version, ref.at, live.now) if ref else {"source": "none"}
            )
        stale = status_word in STALE
        points = _points(records, "dbt_sources", freshness_statuses, uid, {"pass"})
        since, healthy = _onset(points, stale, now_at)
        return Symptom(
            **base,
            status="stale" if stale else ("ok" if status_word == "pass" else "unknown"),
            error=f"freshness {status_word}" if stale else None,
            shapes=[],
            observed=observed,
            failing_since=since,
            healthy_at=healthy,
            relation=node.get("relation"),
        )
    result, observed = _newest_result(uid, records, live)
    status_word = str((result or {}).get("status") or "").lower()
    message = (result or {}).get("message") if status_word in FAILED_DBT else None
    inv = current_failed_invocation(live, records)
    failed_nodes = set((inv or {}).get("failed_nodes") or ())
    if inv is not None and (
        inv.get("status") == "parse_error" or uid in failed_nodes or node.get("name") in failed_nodes
    ):
        status_word = "error"
        message = inv.get("error") or f"dbt {inv.get('command') or ''} failed".strip()
        observed = {**live_source(inv.get("observed_at") or live.now), "file": "dbt.log"}
    failing = status_word in FAILED_DBT
    now_at = epoch_of(observed.get("observed_at")) if observed.get("source") == "live" else None
    points = _points(records, "dbt_run_results", run_statuses, uid, {"success", "pass"})
    since, healthy = _onset(points, failing, now_at)
    return Symptom(
        **base,
        status="failed" if failing else ("ok" if status_word in ("success", "pass", "") else status_word),
        error=str(message)[:500] if message else None,
        shapes=[s for s in (parse_error(message),) if s],
        observed=observed,
        failing_since=since,
        healthy_at=healthy,
        relation=node.get("relation"),
    )


def _table(
    start: str,
    node: dict[str, Any],
    base: dict[str, Any],
    v: dict[str, Any],
    records: Records,
    live: LiveFindings,
) -> Symptom:
    state = live.tables.get(start)
    models = [e["from"] for e in v["up"].get(start, ()) if e["kind"] == "materializes"]
    if models:
        sym = _dbt(v["nodes"][models[0]], {**base}, records, live)
    else:
        sym = Symptom(**base, status="ok", error=None, shapes=[], observed={"source": "none"})
    sym.relation = node.get("name")
    if state is not None:
        sym.observed = live_source(state.live_at or live.now)
        if state.table is None:
            sym.status = "missing"
            sym.error = f"table {node.get('name')} does not exist (read live)"
            sym.shapes = [ErrorShape("missing_relation", (), (str(node.get("name")),))]
            if sym.failing_since is None:
                sym.failing_since = state.live_at
    if sym.healthy_at is None and not sym.failing:
        schemas = records.schemas.get(node.get("warehouse") or "")
        newest = schemas.newest() if schemas else None
        sym.healthy_at = newest.at if newest else live.now
    return sym


def _job(start: str, base: dict[str, Any], records: Records, live: LiveFindings) -> Symptom:
    run = live.builders.get(start)
    history = records.health.job_history.get(start) or []
    if run is not None:
        observed, now_at = live_source(run["observed_at"]), epoch_of(run.get("finished_at"))
    else:
        run = history[0] if history else None
        asset = "dbt_cloud_runs" if base["system"] == "dbt_cloud" else f"orchestrator_runs_{base['system']}"
        ref = records.ref(asset)
        observed = cache_source(asset, ref.version, ref.at, live.now) if ref else {"source": "none"}
        now_at = None
    if run is None:
        return Symptom(**base, status="unknown", error=None, shapes=[], observed={"source": "none"})
    failing = str(run.get("status") or "").lower() in FAILED_RUN
    points = [
        (at, str(r.get("status") or "").lower() == "success")
        for r in history
        if (at := epoch_of(r.get("finished_at") or r.get("end_date"))) is not None
    ]
    since, healthy = _onset(points, failing, now_at)
    message = run.get("message") or run.get("status_message") or run.get("failure_signature")
    return Symptom(
        **base,
        status="failed" if failing else "ok",
        error=str(message) if failing and message else None,
        shapes=[s for s in (parse_error(message),) if s] if failing else [],
        observed=observed,
        failing_since=since,
        healthy_at=healthy,
    )
