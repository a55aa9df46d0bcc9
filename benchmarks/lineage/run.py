"""Cross-stack lineage: speed on synthetic projects, and the root-cause evaluation on running platforms.

    python -m benchmarks.lineage.run [--quick] [--speed-only | --eval-only]

Speed, on a synthetic dbt project (benchmarks/synthetic.py) of 1k and 10k nodes with a warehouse snapshot of
its tables, the same tables in a real DuckDB file (read live), a BI inventory of dashboards whose tiles read
mart tables, dbt Cloud jobs selecting by tag, and health snapshots; every figure through MCP (in-memory client):
- build: `build_graph` (what the `cross_stack_lineage` asset runs) + publish;
- trace vs stitched: `lineage_trace` upstream from a dashboard against what an agent does without it, one
  `dbt_get_lineage` upstream call per model behind each tile; warm (the same session) and cold (a new gateway
  and store reader: the first question after a start or a new graph version); rounds interleaved;
- incident: `lineage_explain_incident` on a tile, from snapshots only and with live probes (each table of the
  chain read in DuckDB, each source's max(loaded_at)) within lineage.live_budget_ms; what the budget did not
  reach; `lineage_what_changed` the same way.
Evaluation: benchmarks/lineage/evaluate.py (incidents made after materialization on the demo and on a
generated project; top-1 / top-3, calls, p50 by kind).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.lineage.sources import LINEAGE_ASSET, Topology, build_graph, store_read
from ade_platform.store import StoreReader, StoreWriter
from benchmarks.synthetic import synthetic_manifest
from benchmarks.timing import fmt_ms, pct

DASHBOARDS = 100
TILES = 6
ROUNDS_COLD = 5


def _fixtures(n_nodes: int) -> dict[str, Any]:
    rng = random.Random(11)
    manifest = synthetic_manifest(n_nodes)
    for node in [*manifest["nodes"].values(), *manifest["sources"].values()]:
        node["database"] = "wh"  # dbt names the catalog: the warehouse tables and the models are one relation
    for src in manifest["sources"].values():  # every source is checked for freshness on `_loaded_at`
        src["loaded_at_field"] = "_loaded_at"
        src["freshness"] = {
            "warn_after": {"count": 12, "period": "hour"},
            "error_after": {"count": 24, "period": "hour"},
        }
    index = build_lineage_index(manifest)
    relations = [
        (uid, rec) for uid, rec in index["nodes"].items() if rec["resource_type"] in ("model", "source")
    ]
    tables = [
        {
            "database": "wh",
            "schema": rec["schema"],
            "name": rec["name"],
            "columns": [
                {"name": c, "type": t, "nullable": True, "position": i}
                for i, (c, t) in enumerate(_columns(rec["resource_type"]), 1)
            ],
        }
        for _, rec in relations
    ]
    marts = [rec["name"] for uid, rec in relations if rec["name"].startswith("mart_")]
    dashboards = []
    for d in range(DASHBOARDS):
        elements = []
        for t in range(TILES):
            a, b = rng.sample(marts, 2)
            sql = f"select count(*) from analytics.{a} x join analytics.{b} y on x.id = y.id"
            elements.append({"id": f"{d}-{t}", "title": f"tile {d}-{t}", "sql": sql})
        dashboards.append({"id": str(d), "title": f"dashboard {d}", "elements": elements})
    models = [uid for uid, rec in relations if rec["resource_type"] == "model"]
    results = [{"unique_id": uid, "status": "success"} for uid in models]
    for r in rng.sample(results, max(1, len(results) // 200)):
        r["status"] = "error"
        r["message"] = "Database Error: relation does not exist"
    return {
        "dbt_manifest": manifest,
        "dbt_lineage_index": index,
        "warehouse_schema_wh": {"tables": tables},
        "bi_inventory_looker": {"tool": "looker", "dashboards": dashboards},
        "dbt_cloud_jobs": {
            "jobs": [
                {"id": i, "name": f"job {tag}", "execute_steps": [f"dbt build --select tag:{tag}"]}
                for i, tag in enumerate(("stg", "int", "mart"), 1)
            ]
        },
        "dbt_run_results": {"metadata": {"generated_at": "2026-01-01T00:00:00Z"}, "results": results},
        "dbt_cloud_runs": {"runs": [{"id": 1, "job_id": 3, "status": "error"}]},
    }


def _columns(resource_type: str) -> list[tuple[str, str]]:
    return (
        [("id", "INTEGER"), ("_loaded_at", "TIMESTAMP")] if resource_type == "source" else [("id", "INTEGER")]
    )


def _warehouse(path: Path, tables: list[dict[str, Any]]) -> None:
    """The project's tables in a real DuckDB file (no rows but one per source), for the live probes."""
    import duckdb

    with duckdb.connect(str(path)) as con:
        for schema in sorted({t["schema"] for t in tables}):
            con.execute(f'create schema if not exists "{schema}"')
        for t in tables:
            cols = ", ".join(f'"{c["name"]}" {c["type"]}' for c in t["columns"])
            con.execute(f'create table "{t["schema"]}"."{t["name"]}" ({cols})')
            if t["schema"] == "raw":
                con.execute(f'insert into "raw"."{t["name"]}" values (1, now() - interval 2 hour)')


async def _latency(
    server: Any, calls: list[tuple[str, dict[str, Any]]], repeats: int, warm: bool = True
) -> tuple[list[float], Any]:
    from fastmcp import Client

    times, last = [], None
    async with Client(server) as client:
        if warm:
            for name, args in calls:
                await client.call_tool(name, args)
        for _ in range(repeats):
            started = time.perf_counter()
            for name, args in calls:
                last = await client.call_tool(name, args)
            times.append(time.perf_counter() - started)
    return times, last


def await_(coro: Any) -> Any:
    return asyncio.run(coro)


def _stitched_calls(fixtures: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    index = fixtures["dbt_lineage_index"]
    by_name = {rec["name"]: uid for uid, rec in index["nodes"].items()}
    tiles = fixtures["bi_inventory_looker"]["dashboards"][7]["elements"]
    models = sorted(
        {by_name[t.split(".")[1]] for el in tiles for t in el["sql"].split() if t.startswith("analytics.")}
    )
    return [("dbt_get_lineage", {"node_id": uid, "direction": "upstream"}) for uid in models]


def bench(n_nodes: int, repeats: int) -> None:
    from mcp_bridge.server import build_server

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        writer = StoreWriter(home / "store")
        fixtures = _fixtures(n_nodes)
        for asset, data in fixtures.items():
            writer.publish(asset, data)
        started = time.perf_counter()
        _warehouse(home / "wh.duckdb", fixtures["warehouse_schema_wh"]["tables"])
        created = time.perf_counter() - started
        topo = Topology({"wh": "duckdb"}, "wh")
        builds = []
        for _ in range(3):
            started = time.perf_counter()
            lineage = build_graph(store_read(StoreReader(home / "store")), topo)
            writer.publish(LINEAGE_ASSET, lineage)
            builds.append(time.perf_counter() - started)
        stats = lineage["stats"]
        print(
            f"{n_nodes:>6} dbt nodes -> lineage of {stats['nodes']} nodes, {stats['edges']} edges; "
            f"build+publish p50 {pct(builds, 50):.2f} s; {len(fixtures['warehouse_schema_wh']['tables'])} tables "
            f"in DuckDB ({created:.0f} s to create)"
        )
        settings = Settings.model_validate(
            {
                "home": home,
                "warehouses": {"wh": {"type": "duckdb", "path": home / "wh.duckdb"}},
                "dbt": {"project_dir": home / "project", "warehouse": "wh"},
            }
        )
        trace = [("lineage_trace", {"start_kind": "dashboard", "start": "7", "direction": "upstream"})]
        stitched = _stitched_calls(fixtures)
        server = build_server(settings)
        warm_trace, warm_stitched = [], []
        for _ in range(repeats):  # interleaved, so a busy moment of the machine hits both alike
            warm_trace += await_(_latency(server, trace, 1))[0]
            warm_stitched += await_(_latency(server, stitched, 1))[0]
        cold_trace, cold_stitched = [], []
        for _ in range(ROUNDS_COLD):
            cold_trace += await_(_latency(build_server(settings), trace, 1, warm=False))[0]
            cold_stitched += await_(_latency(build_server(settings), stitched, 1, warm=False))[0]
        print(f"    lineage_trace (dashboard, upstream), warm   {fmt_ms(warm_trace)}")
        print(f"    stitched: {len(stitched)} dbt_get_lineage calls, warm {fmt_ms(warm_stitched)}   "
              f"stitched/trace {pct(warm_stitched, 50) / pct(warm_trace, 50):.1f}x")  # fmt: skip
        print(f"    lineage_trace, cold (new gateway)          {fmt_ms(cold_trace)}")
        print(f"    stitched, cold (new gateway)               {fmt_ms(cold_stitched)}   "
              f"stitched/trace {pct(cold_stitched, 50) / pct(cold_trace, 50):.1f}x")  # fmt: skip
        tile = {"start_kind": "tile", "start": "7-0"}
        cached, _ = await_(_latency(server, [("lineage_explain_incident", {**tile, "live": False})], repeats))
        live, answer = await_(_latency(server, [("lineage_explain_incident", tile)], repeats))
        changed, _ = await_(_latency(server, [("lineage_what_changed", tile)], max(3, repeats // 3)))
        print(f"    lineage_explain_incident (tile), snapshots only  {fmt_ms(cached)}")
        _report_live("lineage_explain_incident (tile), live probes    ", live, answer.structured_content)
        print(f"    lineage_what_changed (tile), live probes         {fmt_ms(changed)}")
        dashboard = {"start_kind": "dashboard", "start": "7"}
        wide, answer = await_(
            _latency(server, [("lineage_explain_incident", dashboard)], max(3, repeats // 3))
        )
        _report_live("lineage_explain_incident (dashboard, 6 tiles)  ", wide, answer.structured_content)
        _flush()


def _report_live(label: str, times: list[float], body: dict[str, Any]) -> None:
    live = body["live"]
    print(
        f"    {label} {fmt_ms(times)}   chain {body['chain_nodes']} nodes, {live['probes']} probes done "
        f"in {live['elapsed_ms']:.0f} ms"
    )
    missed = live["not_reached"]
    if missed:
        kinds = Counter(m["probe"] for m in missed)
        hops = sorted({m["hops_from_symptom"] for m in missed})
        print(
            f"      not reached within lineage.live_budget_ms: {len(missed)} probes "
            f"({', '.join(f'{k} {n}' for k, n in kinds.items())}), {hops[0]}-{hops[-1]} hops from the start"
        )
    else:
        print("      not reached within lineage.live_budget_ms: nothing (every hop of the chain was probed)")


def _flush() -> None:
    import sys

    if "ade_platform.live" in sys.modules:
        sys.modules["ade_platform.live"].flush_all(120)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--speed-only", action="store_true")
    parser.add_argument("--eval-only", action="store_true")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not args.eval_only:
        repeats = 5 if args.quick else 20
        for n in (1_000,) if args.quick else (1_000, 10_000):
            bench(n, repeats)
    if not args.speed_only:
        from benchmarks.lineage.evaluate import evaluate, table

        which, per_kind = ("generated", 1) if args.quick else ("both", 2)
        print(f"\nroot-cause evaluation: incidents made after materialization ({which}, {per_kind} per kind)")
        print(table(evaluate(which, args.seed, per_kind)))


if __name__ == "__main__":
    main()
