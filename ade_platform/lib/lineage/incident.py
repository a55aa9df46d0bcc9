"""Rank the likely root causes of a broken or stale tile (or table, or model) along its upstream chain.

Each candidate carries its evidence and the tool an agent calls next to confirm it, so every claim is traceable:
- a failed upstream dbt model (the run that just happened) and the nodes it skipped;
- drift on a table the chain reads (a column removed, retyped or renamed), and a tile whose SQL names a column
  the table it reads does not have (the tile, not the data, is wrong);
- a stale source (freshness error or warn);
- failing tests upstream;
- a failed last run of the job, DAG or deployment that builds an upstream model.
Closer to the symptom and more severe ranks first; ties keep graph order.
"""

from __future__ import annotations

from typing import Any

from ade_platform.lib.lineage.trace import Health, builders_of, walk

# base weight of each kind of cause: how often it is THE cause when present upstream of a symptom
_WEIGHT = {
    "tile_references_missing_column": 0.95,
    "failed_model": 0.9,
    "schema_drift": 0.85,
    "stale_source": 0.75,
    "failed_builder_run": 0.6,
    "failing_tests": 0.5,
    "skipped_model": 0.4,
}


def _columns_in_sql(sql: str, dialect: str | None) -> set[str]:
    # Imported here: the lineage toolset loads this module at start-up, and only this check parses SQL.
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return set()
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    return {c.name.lower() for c in tree.find_all(exp.Column) if c.name and c.name.lower() not in aliases}


def missing_columns(sql: str, table_columns: list[set[str]], dialect: str | None = None) -> list[str]:
    """Columns the SQL names that none of the tables it reads has (empty when a table's columns are unknown)."""
    if not table_columns or any(not cols for cols in table_columns):
        return []
    known = set().union(*table_columns)
    return sorted(c for c in _columns_in_sql(sql, dialect) if c not in known and c != "*")


def _next(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


def explain(
    v: dict[str, Any],
    health: Health,
    start: str,
    table_columns: dict[str, set[str]],
    dialect: str | None = None,
    max_nodes: int = 500,
) -> dict[str, Any]:
    """The symptom at `start` and the ranked causes upstream of it."""
    nodes = v["nodes"]
    chain = walk(v, start, "upstream", None, max_nodes)
    start_node = nodes[start]
    causes: list[dict[str, Any]] = []

    def add(kind: str, node_id: str, depth: int, summary: str, evidence: dict[str, Any], nxt: dict[str, Any]):
        score = round(_WEIGHT[kind] * (0.97 ** max(0, depth)), 4)
        node = nodes.get(node_id, {})
        causes.append(
            {
                "cause": kind,
                "node": node_id,
                "name": node.get("name"),
                "system": node.get("system"),
                "hops_from_symptom": depth,
                "score": score,
                "summary": summary,
                "evidence": evidence,
                "next_tool": nxt,
            }
        )

    tiles = [start] if start_node.get("kind") == "tile" else []
    if start_node.get("kind") == "dashboard":
        tiles = [e["from"] for e in v["up"].get(start, ()) if nodes.get(e["from"], {}).get("kind") == "tile"]
    symptom = {"node": start, "name": start_node.get("name"), "kind": start_node.get("kind")}
    tile_errors = []
    for tid in tiles:
        tile = nodes[tid]
        th = health.of(tile)
        if th and th.get("status") in ("error", "empty"):
            tile_errors.append(
                {"tile": tid, "name": tile.get("name"), "status": th["status"], "error": th.get("error")}
            )
        read = [e["from"] for e in v["up"].get(tid, ()) if e["kind"] == "reads"]
        if tile.get("sql") and read:
            cols = [table_columns.get(r, set()) for r in read]
            missing = missing_columns(tile["sql"], cols, dialect)
            if missing:
                models = [e["from"] for r in read for e in v["up"].get(r, ()) if e["kind"] == "materializes"]
                add(
                    "tile_references_missing_column",
                    tid,
                    0,
                    f"the tile's SQL names {', '.join(missing)}, which {', '.join(nodes[r]['name'] for r in read)} "
                    "does not have",
                    {
                        "missing_columns": missing,
                        "tables": read,
                        "models": models,
                        "tile_error": (th or {}).get("error"),
                    },
                    _next("warehouse_get_schema", table_name=nodes[read[0]]["name"].split(".")[-1]),
                )
    if tile_errors:
        symptom["tiles"] = tile_errors

    failed_models: set[str] = set()
    for node_id, where in chain.nodes.items():
        if node_id == start and start_node.get("system") != "dbt":
            continue
        node = nodes.get(node_id, {})
        depth = where["depth"]
        h = health.of(node) if node.get("system") == "dbt" else None
        if h:
            uid = node.get("unique_id")
            status = h.get("run_status")
            if status in ("error", "fail", "runtime error"):
                failed_models.add(node_id)
                add(
                    "failed_model",
                    node_id,
                    depth,
                    f"dbt {node.get('kind')} {node.get('name')} failed in the last run",
                    {
                        "run_status": status,
                        "message": h.get("run_message"),
                        "run_generated_at": h.get("run_generated_at"),
                    },
                    _next("dbt_get_failed_models"),
                )
            elif status == "skipped":
                add(
                    "skipped_model",
                    node_id,
                    depth,
                    f"{node.get('name')} was skipped in the last run (an upstream node failed), so its table is old",
                    {"run_status": status},
                    _next("dbt_get_failed_models"),
                )
            drift = h.get("drift") or {}
            if drift.get("severity") == "error":
                add(
                    "schema_drift",
                    node_id,
                    depth,
                    f"the warehouse relation of {node.get('name')} drifted from what dbt declares",
                    drift,
                    _next("warehouse_detect_schema_drift", model_name=node.get("name")),
                )
            if h.get("freshness_status") in ("error", "warn", "runtime error"):
                add(
                    "stale_source",
                    node_id,
                    depth,
                    f"source {node.get('name')} is {h['freshness_status']} on freshness",
                    {"freshness_status": h["freshness_status"], "max_loaded_at": h.get("max_loaded_at")},
                    _next("dbt_get_source_freshness"),
                )
            failing = (h.get("tests") or {}).get("failing") or []
            if failing:
                add(
                    "failing_tests",
                    node_id,
                    depth,
                    f"{len(failing)} test(s) on {node.get('name')} did not pass",
                    {"failing": failing[:10]},
                    _next("dbt_get_model_tests", model_name=uid),
                )
            for b in builders_of(v, node_id):
                bh = health.of(nodes.get(b["builder"], {}))
                if bh and str(bh.get("last_run_status") or "").lower() in (
                    "error",
                    "failed",
                    "cancelled",
                    "crashed",
                ):
                    system = nodes.get(b["builder"], {}).get("system")
                    tool = "dbtcloud_get_last_run" if system == "dbt_cloud" else "orchestrator_get_last_run"
                    ref = nodes[b["builder"]].get("job_id") or nodes[b["builder"]].get("dag_id")
                    args = {"job_id": ref} if system == "dbt_cloud" else {"dag_id": ref, "backend": system}
                    add(
                        "failed_builder_run",
                        b["builder"],
                        depth,
                        f"the last run of {nodes[b['builder']].get('name')}, which builds {node.get('name')}, failed",
                        {**bh, "builds": node_id, "how": b["how"]},
                        _next(tool, **args),
                    )
    # one entry per (cause, node): a builder seen from several models keeps its closest hop
    best: dict[tuple[str, str], dict[str, Any]] = {}
    for c in causes:
        key = (c["cause"], c["node"])
        if key not in best or c["score"] > best[key]["score"]:
            best[key] = c
    ranked = sorted(best.values(), key=lambda c: (-c["score"], c["hops_from_symptom"], c["node"]))
    for i, c in enumerate(ranked, 1):
        c["rank"] = i
    return {
        "symptom": symptom,
        "causes": ranked,
        "chain_nodes": len(chain.nodes),
        "truncated": chain.truncated,
        "verdict": ranked[0]["summary"]
        if ranked
        else "no failing, stale or drifted hop upstream in the store",
    }
