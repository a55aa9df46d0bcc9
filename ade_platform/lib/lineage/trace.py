"""Walk the cross-stack graph from any node, and stamp each hop with its latest health from the store.

The graph (the `cross_stack_lineage` asset) changes when a project or a dashboard changes; health changes with
every run. So the walk reads the graph snapshot and the health comes from the newest snapshots of the run-level
assets at answer time (dbt run results and source freshness, drift reports, BI health, job and DAG runs).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Literal

from ade_platform.lib.errors import CodedError
from ade_platform.lib.lineage.openlineage import job_runs
from ade_platform.lib.lineage.relations import parse_relation

StartKind = Literal["dashboard", "tile", "table", "dbt_node", "job"]
FLOW_EDGE_KINDS = {"feeds", "materializes", "reads", "writes", "shown_on", "same_object"}
_FAILED_DBT = {"error", "fail", "runtime error"}
_FAILED_RUN = {"error", "failed", "cancelled", "crashed", "failure"}


class LineageLookupError(CodedError, ValueError):
    """The start of a trace names no node (code: node_not_found) or several (code: ambiguous_node)."""

    def __init__(self, code: str, detail: str, candidates: list[str] | None = None):
        super().__init__(code, detail)
        self.candidates = candidates or []


def views(lineage: dict[str, Any]) -> dict[str, Any]:
    """The graph's adjacency index (built once per version, like the dbt lineage index): data-flow edges up and
    down, the builders of each dbt node and what each builder builds, nodes by id, and `names`, the keys a start
    reference can use ((kind, key) -> node ids) so finding a start is a lookup, not a scan."""
    nodes = {n["id"]: n for n in lineage.get("nodes") or []}
    up: dict[str, list[dict[str, Any]]] = {}
    down: dict[str, list[dict[str, Any]]] = {}
    builders: dict[str, list[dict[str, Any]]] = {}
    builds: dict[str, list[str]] = {}
    for e in lineage.get("edges") or []:
        if e["kind"] == "builds":
            builders.setdefault(e["to"], []).append(e)
            builds.setdefault(e["from"], []).append(e["to"])
        elif e["kind"] in FLOW_EDGE_KINDS:
            down.setdefault(e["from"], []).append(e)
            up.setdefault(e["to"], []).append(e)
    names: dict[tuple[str, str], list[str]] = {}
    add = names.setdefault
    for node_id, n in nodes.items():
        kind, system = n.get("kind"), n.get("system")
        if system == "warehouse":
            parts = (n.get("name") or "").lower().split(".")
            for i in range(len(parts)):  # every trailing part: orders, main.orders, db.main.orders
                add(("table", ".".join(parts[i:])), []).append(node_id)
        elif system == "dbt":
            add(("dbt_node", n.get("unique_id") or ""), []).append(node_id)
            if n.get("name") and n.get("unique_id") != n.get("name"):
                add(("dbt_node", n["name"]), []).append(node_id)
        elif kind in ("dashboard", "tile"):
            ref = n.get("dashboard_id" if kind == "dashboard" else "tile_id")
            if ref not in (None, ""):
                add((kind, str(ref)), []).append(node_id)
            if n.get("name"):
                add((kind, n["name"].lower()), []).append(node_id)
        if kind in ("job", "dag", "deployment"):
            for key in {n.get("job_id"), n.get("name"), n.get("dag_id")} - {None, ""}:
                add(("job", str(key)), []).append(node_id)
    return {"nodes": nodes, "up": up, "down": down, "builders": builders, "builds": builds, "names": names}


def find_start(v: dict[str, Any], kind: StartKind, ref: str, system: str | None = None) -> str:
    """The node id a start reference names (an id, a BI id or title, a relation, a unique_id or name, a job)."""
    nodes: dict[str, dict[str, Any]] = v["nodes"]
    if ref in nodes:
        return ref
    want = ref.strip()
    low = want.lower()
    names: dict[tuple[str, str], list[str]] = v["names"]
    if kind in ("dashboard", "tile"):
        hits = dict.fromkeys(names.get((kind, want), []) + names.get((kind, low), []))
        hits = [h for h in hits if system is None or nodes[h].get("system") == system]  # type: ignore[assignment]
    elif kind == "table":
        hits = list(dict.fromkeys(names.get(("table", parse_relation(want).dotted.lower()), [])))
    elif kind == "dbt_node":
        hits = list(dict.fromkeys(names.get(("dbt_node", want), [])))
        if len(hits) > 1:
            models = [h for h in hits if nodes[h].get("kind") == "model"]
            hits = models or hits
    else:
        hits = [
            h
            for h in dict.fromkeys(names.get(("job", want), []))
            if system is None or nodes[h].get("system") == system
        ]
    if not hits:
        raise LineageLookupError("node_not_found", f"no {kind} '{want}' in the cross-stack lineage")
    if len(hits) > 1:
        raise LineageLookupError(
            "ambiguous_node", f"{len(hits)} {kind}s match '{want}'; pass a node id", sorted(hits)[:20]
        )
    return hits[0]


@dataclass
class Walk:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # id -> {direction, depth}
    edges: list[dict[str, Any]] = field(default_factory=list)
    truncated: bool = False


def walk(
    v: dict[str, Any],
    start: str,
    direction: Literal["upstream", "downstream", "both"] = "both",
    depth: int | None = None,
    max_nodes: int = 200,
) -> Walk:
    """Breadth-first along data-flow edges; a job start walks from every dbt node it builds."""
    out = Walk()
    out.nodes[start] = {"direction": "start", "depth": 0}
    roots = [start]
    if start in v["builds"]:
        for uid in v["builds"][start]:
            if len(out.nodes) >= max_nodes:
                out.truncated = True
                break
            out.nodes.setdefault(uid, {"direction": "built", "depth": 1})
            out.edges.append({"from": start, "to": uid, "kind": "builds", "how": "selector"})
        roots = [start, *v["builds"][start]]
    sides = [("upstream", v["up"], "from"), ("downstream", v["down"], "to")]
    for side, adjacency, far_end in sides:
        if direction not in (side, "both"):
            continue
        level = {r: 0 for r in roots}
        queue = deque(roots)
        while queue:
            cur = queue.popleft()
            if depth is not None and level[cur] >= depth:
                continue
            for e in adjacency.get(cur, ()):
                nxt = e[far_end]
                if nxt not in out.nodes:
                    if len(out.nodes) >= max_nodes:
                        out.truncated = True
                        continue
                    out.nodes[nxt] = {"direction": side, "depth": level[cur] + 1}
                if nxt not in level:
                    level[nxt] = level[cur] + 1
                    queue.append(nxt)
                out.edges.append({k: e[k] for k in ("from", "to", "kind", "how")})
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for e in out.edges:
        key = (e["from"], e["to"], e["kind"])
        if key not in seen and e["from"] in out.nodes and e["to"] in out.nodes:
            seen.add(key)
            unique.append(e)
    out.edges = unique
    return out


@dataclass
class HealthInputs:
    """The newest run-level snapshots (each optional) and their asset names, for provenance."""

    run_results: dict[str, Any] | None = None  # dbt_run_results
    index: dict[str, Any] | None = None  # dbt_lineage_index (tests of each node)
    sources: dict[str, Any] | None = None  # dbt_sources
    drift: dict[str, dict[str, Any]] = field(default_factory=dict)  # warehouse -> warehouse_drift_<wh>
    bi_health: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool -> bi_health_<tool>
    dbt_cloud_runs: dict[str, Any] | None = None
    orchestrators: dict[str, dict[str, Any]] = field(default_factory=dict)  # backend -> runs asset
    openlineage: dict[str, Any] | None = None  # openlineage_events: the run states of OpenLineage jobs


class Health:
    """Health lookups, indexed once per set of snapshots."""

    def __init__(self, h: HealthInputs):
        self.results = {r.get("unique_id"): r for r in (h.run_results or {}).get("results") or []}
        self.run_generated_at = ((h.run_results or {}).get("metadata") or {}).get("generated_at")
        self.tests_by_node = (h.index or {}).get("tests_by_node") or {}
        self.index_nodes = (h.index or {}).get("nodes") or {}
        self.freshness = {r.get("unique_id"): r for r in (h.sources or {}).get("results") or []}
        self.drift: dict[str, dict[str, Any]] = {}
        for wh, report in h.drift.items():
            for rel in report.get("relations") or []:
                self.drift[rel.get("unique_id")] = {**rel, "warehouse": wh}
        self.tiles: dict[tuple[str, str], dict[str, Any]] = {}
        self.dashboards: dict[tuple[str, str], dict[str, Any]] = {}
        self.checked_at: dict[str, Any] = {}
        for tool, report in h.bi_health.items():
            self.checked_at[tool] = report.get("checked_at")
            for dash in report.get("dashboards") or []:
                self.dashboards[(tool, str(dash.get("id")))] = dash
                for el in dash.get("elements") or []:
                    self.tiles[(tool, str(el.get("id")))] = el
        self.job_runs: dict[str, dict[str, Any]] = {}
        self.job_history: dict[str, list[dict[str, Any]]] = {}  # builder node -> its runs, newest first
        for run in (h.dbt_cloud_runs or {}).get("runs") or []:
            self.job_runs.setdefault(f"dbt_cloud:job:{run.get('job_id')}", run)
            self.job_history.setdefault(f"dbt_cloud:job:{run.get('job_id')}", []).append(run)
        for backend, data in h.orchestrators.items():
            kind = "job" if backend == "dagster" else ("deployment" if backend == "prefect" else "dag")
            for dag in data.get("dags") or []:
                runs = dag.get("runs") or []
                if runs:
                    self.job_runs[f"{backend}:{kind}:{dag.get('dag_id')}"] = runs[0]
                    self.job_history[f"{backend}:{kind}:{dag.get('dag_id')}"] = list(runs)
        for node_id, runs in job_runs(h.openlineage).items():
            if runs:
                self.job_runs[node_id], self.job_history[node_id] = runs[0], runs

    def of(self, node: dict[str, Any]) -> dict[str, Any] | None:
        system, kind = node.get("system"), node.get("kind")
        if system == "dbt":
            return self._dbt(node)
        if kind == "tile":
            el = self.tiles.get((system or "", str(node.get("tile_id"))))
            if el is None:
                return None
            return {
                "status": el.get("status"),
                "row_count": el.get("row_count"),
                "error": el.get("error"),
                "checked_at": self.checked_at.get(system or ""),
                "source": f"bi_health_{system}",
            }
        if kind == "dashboard":
            dash = self.dashboards.get((system or "", str(node.get("dashboard_id"))))
            if dash is None:
                return None
            return {"status": dash.get("status"), "source": f"bi_health_{system}"}
        if kind in ("job", "dag", "deployment"):
            run = self.job_runs.get(node["id"])
            if run is None:
                return None
            return {
                "last_run_status": run.get("status"),
                "last_run_state": run.get("state"),
                "last_run_id": run.get("id") or run.get("run_id"),
                "finished_at": run.get("finished_at") or run.get("end_date"),
                "failure_signature": run.get("failure_signature"),
                "source": run_asset(system),
            }
        return None

    def tests_of(self, node: dict[str, Any]) -> dict[str, str]:
        """A dbt node's tests (unique_id -> name): from the graph node, else from the dbt lineage index."""
        if node.get("tests"):
            return node["tests"]
        uid = node.get("unique_id") or ""
        return {t: (self.index_nodes.get(t) or {}).get("name") or t for t in self.tests_by_node.get(uid, ())}

    def _dbt(self, node: dict[str, Any]) -> dict[str, Any] | None:
        uid = node.get("unique_id") or ""
        out: dict[str, Any] = {}
        result = self.results.get(uid)
        if result is not None:
            out["run_status"] = str(result.get("status") or "").lower()
            if result.get("message") and out["run_status"] in _FAILED_DBT:
                out["run_message"] = str(result.get("message"))[:500]
            out["run_generated_at"] = self.run_generated_at
        tests = []
        for tid, name in self.tests_of(node).items():
            r = self.results.get(tid)
            if r is not None:
                tests.append({"test": name, "status": r.get("status")})
        if tests:
            failing = [t for t in tests if str(t["status"]).lower() in _FAILED_DBT | {"warn"}]
            out["tests"] = {"total": len(tests), "failing": failing}
        fresh = self.freshness.get(uid)
        if fresh is not None:
            out["freshness_status"] = str(fresh.get("status") or "").lower()
            out["max_loaded_at"] = fresh.get("max_loaded_at")
        drift = self.drift.get(uid)
        if drift is not None:
            out["drift"] = {
                "severity": drift.get("severity"),
                "removed_from_warehouse": [
                    c.get("column_name") for c in drift.get("removed_from_warehouse") or []
                ],
                "type_changed": [c.get("column_name") for c in drift.get("type_changed") or []],
                "likely_renames": drift.get("likely_renames") or [],
                "relation_missing": drift.get("relation_missing"),
                "warehouse": drift.get("warehouse"),
            }
        return out or None


def status_of(health: dict[str, Any] | None) -> str:
    """One word per hop: failed / stale / drifted / warn / ok / unknown."""
    if not health:
        return "unknown"
    if health.get("run_status") in _FAILED_DBT or health.get("status") == "error":
        return "failed"
    if str(health.get("last_run_status") or "").lower() in _FAILED_RUN:
        return "failed"
    if health.get("freshness_status") in ("error", "runtime error"):
        return "stale"
    if (health.get("drift") or {}).get("severity") == "error":
        return "drifted"
    if health.get("run_status") == "skipped" or health.get("status") == "empty":
        return "warn"
    if (health.get("tests") or {}).get("failing") or health.get("freshness_status") == "warn":
        return "warn"
    return "ok"


def run_asset(system: str | None) -> str:
    """The store asset a builder's runs come from."""
    if system == "openlineage":
        return "openlineage_events"
    return "dbt_cloud_runs" if system == "dbt_cloud" else f"orchestrator_runs_{system}"


def builders_of(v: dict[str, Any], node_id: str) -> list[dict[str, Any]]:
    return [
        {"builder": e["from"], "how": e["how"], **({"command": e["command"]} if e.get("command") else {})}
        for e in v["builders"].get(node_id, ())
    ]
