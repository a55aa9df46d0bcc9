"""Detection: the unhealthy symptoms the store shows now, each explained from the snapshots, as findings.

A symptom is a graph node whose newest health is failed, stale or drifted (a tile or dashboard in error, a dbt
model or test that failed, a source past its freshness threshold, a table that drifted, a job or DAG whose last
run failed), or a tile an agent saw failing live since (the `bi_tile_health` observations). Each is explained by
the root-cause engine (`lineage/incident.py`) from the snapshots only (no live probe: detection runs every
interval in the daemon and must cost the warehouse nothing); its top cause is the grouping key. A symptom with no
cause upstream is its own cause (`unexplained_<status>` on its node), so a red tile is never dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ade_platform.lib.incidents.grouping import Finding
from ade_platform.lib.lineage import incident
from ade_platform.lib.lineage.conditions import epoch_of
from ade_platform.lib.lineage.evidence import LiveFindings
from ade_platform.lib.lineage.history import History
from ade_platform.lib.lineage.render import mermaid
from ade_platform.lib.lineage.sources import (
    LINEAGE_ASSET,
    Topology,
    health_inputs,
    store_read,
    table_columns,
)
from ade_platform.lib.lineage.store_records import StoreVersions, store_records
from ade_platform.lib.lineage.trace import Health, status_of, views, walk
from ade_platform.store import SnapshotNotFound, StoreReader
from ade_platform.store.observations import latest_observations

UNHEALTHY = frozenset({"failed", "stale", "drifted"})
_SYMPTOM_KINDS = frozenset({"tile", "dashboard", "model", "seed", "snapshot", "source", "test", "job", "dag",
                            "deployment", "table", "view"})  # fmt: skip
_CHAIN_NODES = 40  # nodes drawn in an incident's Mermaid chain


@dataclass
class Detected:
    findings: list[Finding]
    symptoms_seen: int  # unhealthy nodes found (findings may be fewer: max_symptoms)
    graph_version: str | None


def _live_failing_tiles(reader: StoreReader, v: dict[str, Any], health: Health) -> dict[str, str]:
    """Tile node -> 'failed' for the tiles an agent saw failing live after the BI health snapshot was taken."""
    by_key = {}
    for node_id, node in v["nodes"].items():
        if node.get("kind") == "tile":
            key = f"{node.get('system')}:dashboard/{node.get('dashboard_id')}/tile/{node.get('tile_id')}"
            by_key[key] = (node_id, epoch_of(health.checked_at.get(str(node.get("system")))) or 0.0)
    out = {}
    for obs in latest_observations(reader, "bi_tile_health"):
        node_id, checked = by_key.get(obs.key, (None, 0.0))
        if node_id and obs.observed_at > checked and str((obs.state or {}).get("status")) == "error":
            out[node_id] = "failed"
    return out


def _chain(v: dict[str, Any], start: str, cause: str, health: Health) -> str:
    w = walk(v, start, "upstream", None, _CHAIN_NODES)
    nodes = [v["nodes"][n] for n in w.nodes]
    status = {n["id"]: status_of(health.of(n)) for n in nodes}
    if cause in status and status[cause] == "ok":
        status[cause] = (
            "failed"  # the cause is drawn red even when its own health reads ok (a renamed column)
        )
    return mermaid(nodes, w.edges, status)


def detect(
    reader: StoreReader,
    topology: Topology,
    *,
    dialect: str | None = None,
    max_symptoms: int = 200,
    max_nodes: int = 300,
    now: float | None = None,
    feedback: Any = None,
) -> Detected:
    """The findings the store shows now (empty when the lineage graph was never built)."""
    now = time.time() if now is None else now
    try:
        snapshot = reader.latest(LINEAGE_ASSET)
    except SnapshotNotFound:
        return Detected([], 0, None)
    lineage = snapshot.data
    v = views(lineage)
    read = store_read(reader)
    inputs, joined = health_inputs(read, topology)
    health = Health(inputs)
    history = History(StoreVersions(reader))
    records = store_records(reader, history, topology, health, joined, table_columns(read, topology, lineage))
    unhealthy: dict[str, str] = {}
    for node_id, node in v["nodes"].items():
        if node.get("kind") in _SYMPTOM_KINDS:
            st = status_of(health.of(node))
            if st in UNHEALTHY:
                unhealthy[node_id] = st
    for node_id, st in _live_failing_tiles(reader, v, health).items():
        unhealthy.setdefault(node_id, st)
    findings = []
    for node_id in sorted(unhealthy)[:max_symptoms]:
        node = v["nodes"][node_id]
        body = incident.explain(
            v, node_id, records, LiveFindings(now=now), dialect, max_nodes, feedback=feedback
        )
        top = next((c for c in body["causes"] if not c["background"]), None)
        symptom = {
            "node": node_id,
            "kind": node.get("kind"),
            "name": node.get("name"),
            "system": node.get("system"),
            "status": unhealthy[node_id],
            "error": (body["symptom"].get("error") or None),
        }
        chain_walk = walk(v, node_id, "upstream", None, max_nodes)
        systems = {str(v["nodes"][n].get("system")) for n in chain_walk.nodes if v["nodes"][n].get("system")}
        if top is None:
            cause_node, cause_kind = node_id, f"unexplained_{unhealthy[node_id]}"
            detail = {"object": node.get("name") or node_id, "change": unhealthy[node_id],
                      "summary": body["verdict"], "system": node.get("system"), "name": node.get("name")}  # fmt: skip
        else:
            cause_node, cause_kind = top["node"], top["cause"]
            detail = {k: top.get(k) for k in ("object", "change", "summary", "system", "name", "onset",
                                              "evidence_source", "explanation", "next_tool")}  # fmt: skip
        findings.append(
            Finding(
                node=cause_node,
                cause=cause_kind,
                cause_detail=detail,
                symptom=symptom,
                verdict=body["verdict"],
                confidence=body["confidence"],
                systems=systems,
                chain=_chain(v, node_id, cause_node, health),
            )
        )
    return Detected(findings, len(unhealthy), snapshot.version)
