"""Cross-stack lineage: asset build time and tool latency on synthetic projects, against the stitched way.

    python -m benchmarks.lineage.run [--quick]

A synthetic dbt project (benchmarks/synthetic.py) of 1k and 10k nodes, a warehouse snapshot of its tables, a BI
inventory of dashboards whose tiles read mart tables, dbt Cloud jobs selecting by tag, and health snapshots.
- build: `build_graph` (what the `cross_stack_lineage` asset runs) + publish.
- trace: `lineage_trace` upstream from a dashboard, through MCP (in-memory client), warm.
- incident: `lineage_explain_incident` on a tile, warm.
- stitched: what an agent does without it, for the same dashboard: one `dbt_get_lineage` upstream call per
  model behind each tile (after reading the inventory), through the same client. Both answer which models and
  sources the dashboard depends on; the ratio is stitched / trace.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.lineage.sources import LINEAGE_ASSET, Topology, build_graph
from ade_platform.store import SnapshotNotFound, StoreReader, StoreWriter
from benchmarks.synthetic import synthetic_manifest
from benchmarks.timing import fmt_ms, pct

DASHBOARDS = 100
TILES = 6


def _fixtures(n_nodes: int) -> dict[str, Any]:
    rng = random.Random(11)
    manifest = synthetic_manifest(n_nodes)
    index = build_lineage_index(manifest)
    relations = [
        (uid, rec) for uid, rec in index["nodes"].items() if rec["resource_type"] in ("model", "source")
    ]
    tables = [
        {"database": "wh", "schema": rec["schema"], "name": rec["name"], "columns": [{"name": "id"}]}
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


def _read(reader: StoreReader):
    def read(asset: str):
        try:
            snap = reader.latest(asset)
        except SnapshotNotFound:
            return None
        return snap.data, snap.version

    return read


async def _latency(server: Any, calls: list[tuple[str, dict[str, Any]]], repeats: int) -> list[float]:
    from fastmcp import Client

    times = []
    async with Client(server) as client:
        for name, args in calls:  # warm-up
            await client.call_tool(name, args)
        for _ in range(repeats):
            started = time.perf_counter()
            for name, args in calls:
                await client.call_tool(name, args)
            times.append(time.perf_counter() - started)
    return times


def bench(n_nodes: int, repeats: int) -> None:
    from mcp_bridge.server import build_server

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        writer = StoreWriter(home / "store")
        fixtures = _fixtures(n_nodes)
        for asset, data in fixtures.items():
            writer.publish(asset, data)
        topo = Topology({"wh": "duckdb"}, "wh")
        builds = []
        for _ in range(3):
            started = time.perf_counter()
            lineage = build_graph(_read(StoreReader(home / "store")), topo)
            writer.publish(LINEAGE_ASSET, lineage)
            builds.append(time.perf_counter() - started)
        stats = lineage["stats"]
        print(
            f"{n_nodes:>6} dbt nodes -> lineage of {stats['nodes']} nodes, {stats['edges']} edges; "
            f"build+publish p50 {pct(builds, 50):.2f} s"
        )
        settings = Settings.model_validate(
            {"home": home, "warehouses": {"wh": {"type": "duckdb", "path": home / "wh.duckdb"}}}
        )
        server = build_server(settings, only=None)
        trace = await_(
            _latency(
                server,
                [("lineage_trace", {"start_kind": "dashboard", "start": "7", "direction": "upstream"})],
                repeats,
            )
        )
        incident = await_(
            _latency(server, [("lineage_explain_incident", {"start_kind": "tile", "start": "7-0"})], repeats)
        )
        index = fixtures["dbt_lineage_index"]
        by_name = {rec["name"]: uid for uid, rec in index["nodes"].items()}
        tiles = fixtures["bi_inventory_looker"]["dashboards"][7]["elements"]
        models = sorted(
            {
                by_name[t.split(".")[1]]
                for el in tiles
                for t in el["sql"].split()
                if t.startswith("analytics.")
            }
        )
        stitched_calls = [("dbt_get_lineage", {"node_id": uid, "direction": "upstream"}) for uid in models]
        stitched = await_(_latency(server, stitched_calls, repeats))
        print(f"    lineage_trace (dashboard, upstream)   {fmt_ms(trace)}")
        print(f"    lineage_explain_incident (tile)       {fmt_ms(incident)}")
        print(
            f"    stitched: {len(stitched_calls)} dbt_get_lineage calls {fmt_ms(stitched)}   "
            f"ratio stitched/trace {pct(stitched, 50) / pct(trace, 50):.1f}x (and no job, table or health joined)"
        )


def await_(coro: Any) -> Any:
    return asyncio.run(coro)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    repeats = 5 if args.quick else 30
    for n in (1_000,) if args.quick else (1_000, 10_000):
        bench(n, repeats)


if __name__ == "__main__":
    main()
