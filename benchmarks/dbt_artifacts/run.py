"""dbt-artifacts benchmark: `python -m benchmarks.dbt_artifacts.run [--quick] [--sizes 1000,10000,50000]`.

Per size (synthetic manifest, see generate.py):
- ingestion: publish the target folder to a fresh store (parse, validate, write, build and write the lineage
  index), then the first query (the MCP process parses the index and builds its name lookup, once per version);
- the tool's own work in-process (the tool function called directly: store pointer check, answer, provenance);
- the MCP round trip through fastmcp's in-memory client, for the same calls and for a no-op tool registered
  on the same server (same middleware, same thread hop) in the same run.
Then the same lineage question on the demo project (dbt_demo) answered by `dbt ls --select <model>+` (tests
excluded, as the tool excludes them; the two node sets are checked equal first) vs the MCP tool, as a ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

REPO_ROOT = Path(__file__).resolve().parents[2]


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _fmt(samples: list[float]) -> dict[str, float]:
    return {"p50_ms": round(_pct(samples, 0.5) * 1000, 3), "p95_ms": round(_pct(samples, 0.95) * 1000, 3)}


def _settings(home: Path) -> Any:
    from ade_platform.config import load_settings

    return load_settings(REPO_ROOT / "ade.yaml", env={**os.environ, "ADE_HOME": str(home)})


def _server(settings: Any) -> Any:
    from mcp_bridge.server import build_server
    from mcp_bridge.toolsets.base import READ_ONLY

    server = build_server(settings, only="dbt-artifacts")

    def bench_noop() -> dict[str, Any]:
        """No-op: the MCP overhead baseline."""
        return {"ok": True}

    server.tool(annotations=READ_ONLY)(bench_noop)
    return server


def _questions(manifest: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """A late mart (deep upstream tree), a hub intermediate model that many marts read (wide downstream
    tree: the worst case, usually cut at the 500-node cap) and a staging model (tests by model name)."""
    models = sorted(uid for uid, n in manifest["nodes"].items() if n["resource_type"] == "model")
    mart = next(uid for uid in reversed(models) if ".mart_" in uid)
    hub = next(uid for uid in models if ".int_" in uid)
    staging = next(uid for uid in models if ".stg_" in uid)
    return {
        "lineage_full_upstream": ("dbt_get_lineage", {"node_id": mart, "direction": "upstream"}),
        "lineage_full_downstream": ("dbt_get_lineage", {"node_id": hub, "direction": "downstream"}),
        "lineage_depth2": ("dbt_get_lineage", {"node_id": mart, "direction": "upstream", "depth": 2}),
        "blast_radius": ("dbt_get_blast_radius", {"node_id": hub}),
        "model_tests": ("dbt_get_model_tests", {"model_name": staging.rsplit(".", 1)[-1]}),
        "noop": ("bench_noop", {}),
    }


async def _measure(server: Any, questions: dict[str, tuple[str, dict[str, Any]]], n: int) -> dict[str, Any]:
    from fastmcp import Client

    out: dict[str, Any] = {}
    # The tool's own work: the registered function called directly, in-process.
    for label, (tool_name, args) in questions.items():
        fn = (await server.get_tool(tool_name)).fn
        fn(**args)
        samples, cpu = [], []
        for _ in range(n):
            t0, c0 = time.perf_counter(), time.thread_time()
            fn(**args)
            cpu.append(time.thread_time() - c0)
            samples.append(time.perf_counter() - t0)
        # wall time, and this thread's CPU time (what other processes on a shared machine cannot inflate)
        out[label] = {"work": _fmt(samples), "work_cpu": _fmt(cpu)}
    async with Client(server) as client:
        for label, (tool_name, args) in questions.items():
            result = await client.call_tool(tool_name, args)
            payload = result.structured_content or {}
            out[label]["answer_nodes"] = payload.get(
                "total_nodes", payload.get("total_affected", payload.get("total"))
            )
            out[label]["answer_bytes"] = len(orjson.dumps(payload))
        # Each question against the no-op in alternating chunks of 10 calls: load drift on a shared machine
        # hits both alike, and each tool pays for its own garbage (a chunk of large answers is not followed by
        # a small answer that would absorb their collection).
        noop_name, noop_args = questions["noop"]
        noop_all: list[float] = []
        for label, (tool_name, args) in questions.items():
            if label == "noop":
                continue
            mine: list[float] = []
            baseline: list[float] = []
            for _ in range(max(1, n // 10)):
                for name, arguments, sink in ((tool_name, args, mine), (noop_name, noop_args, baseline)):
                    for _ in range(10):
                        t0 = time.perf_counter()
                        await client.call_tool(name, arguments)
                        sink.append(time.perf_counter() - t0)
            out[label]["mcp"] = _fmt(mine)
            out[label]["mcp_vs_noop"] = round(_pct(mine, 0.5) / _pct(baseline, 0.5), 2)
            noop_all += baseline
        out["noop"]["mcp"] = _fmt(noop_all)
        out["noop"]["mcp_vs_noop"] = 1.0
    return out


def bench_size(n_nodes: int, iterations: int) -> dict[str, Any]:
    from ade_platform.lib.dbt.publish import publish_target_dir
    from ade_platform.store import StoreWriter
    from benchmarks.dbt_artifacts.generate import generate

    with tempfile.TemporaryDirectory(prefix="ade-bench-") as tmp:
        home = Path(tmp) / "home"
        target = Path(tmp) / "target"
        target.mkdir()
        t0 = time.perf_counter()
        artifacts = generate(n_nodes)
        for name, data in artifacts.items():
            (target / f"{name}.json").write_bytes(orjson.dumps(data))
        generated = time.perf_counter() - t0
        settings = _settings(home)
        t0 = time.perf_counter()
        publish_target_dir(StoreWriter(settings.store_root), target)
        ingest = time.perf_counter() - t0
        server = _server(settings)
        questions = _questions(artifacts["manifest"])
        tool_name, args = questions["model_tests"]
        t0 = time.perf_counter()
        asyncio.run(_first_call(server, tool_name, args))
        first = time.perf_counter() - t0
        results = asyncio.run(_measure(server, questions, iterations))
        star = _select_star_first_calls(settings)
        manifest_mb = (target / "manifest.json").stat().st_size / 1e6
        graph = artifacts["manifest"]
        return {
            "nodes": len(graph["nodes"]) + len(graph["sources"]) + len(graph["exposures"]),
            "manifest_mb": round(manifest_mb, 1),
            "generate_s": round(generated, 2),
            "ingest_s": round(ingest, 2),
            "first_query_s": round(first, 2),
            "select_star": star,
            "tools": results,
        }


def _select_star_first_calls(settings: Any) -> dict[str, float]:
    """The first dbt_find_select_star of a snapshot version (each in a new server: nothing memoized), scanned
    on demand vs answered from the dbt_select_star asset, and what that asset costs to materialize."""
    from ade_platform.lib.dbt.publish import publish_select_star
    from ade_platform.store import StoreReader, StoreWriter

    def first_call() -> float:
        t0 = time.perf_counter()
        asyncio.run(_first_call(_server(settings), "dbt_find_select_star", {}))
        return round(time.perf_counter() - t0, 2)

    on_demand = first_call()
    t0 = time.perf_counter()
    publish_select_star(StoreWriter(settings.store_root), StoreReader(settings.store_root), None)
    asset = round(time.perf_counter() - t0, 2)
    return {
        "first_call_on_demand_s": on_demand,
        "asset_materialize_s": asset,
        "first_call_from_asset_s": first_call(),
    }


async def _first_call(server: Any, tool_name: str, args: dict[str, Any]) -> None:
    from fastmcp import Client

    async with Client(server) as client:
        await client.call_tool(tool_name, args)


# The same question on both sides: dbt_get_lineage walks the graph without tests (data tests and unit tests are
# what dbt_get_model_tests answers), so `dbt ls` leaves them out too; the node sets are compared before timing.
DBT_LS_SELECT = ["--select", "stg_orders+", "--exclude-resource-type", "test", "unit_test"]
LINEAGE_QUESTION = ("dbt_get_lineage", {"node_id": "model.dbt_demo.stg_orders", "direction": "downstream"})


async def _lineage_node_ids(server: Any) -> set[str]:
    from fastmcp import Client

    async with Client(server) as client:
        result = await client.call_tool(*LINEAGE_QUESTION)
    return {node["node_id"] for node in result.structured_content["nodes"]}


def bench_dbt_ls(iterations: int) -> dict[str, Any] | None:
    """`dbt ls --select stg_orders+` (tests excluded) on dbt_demo vs dbt_get_lineage(stg_orders, downstream)
    through MCP, once both are seen to list the same nodes."""
    dbt = Path(sys.executable).parent / "dbt"
    if not dbt.exists():
        return None
    from ade_platform.lib.dbt.publish import publish_target_dir
    from ade_platform.store import StoreWriter

    project = REPO_ROOT / "dbt_demo"
    with tempfile.TemporaryDirectory(prefix="ade-bench-ls-") as tmp:
        target, logs = Path(tmp) / "target", Path(tmp) / "logs"
        env = {
            **os.environ,
            "ADE_DUCKDB_PATH": str(Path(tmp) / "demo.duckdb"),
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
        }
        common = ["--project-dir", str(project), "--profiles-dir", str(project), "--target-path", str(target),
                  "--log-path", str(logs)]  # fmt: skip
        subprocess.run([str(dbt), "parse", "--quiet", *common], env=env, check=True, capture_output=True)
        samples, listed = [], []
        for _ in range(max(3, iterations // 20)):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [str(dbt), "ls", *DBT_LS_SELECT, "--output", "json", "--quiet", *common],
                env=env, capture_output=True, text=True, check=True,
            )  # fmt: skip
            samples.append(time.perf_counter() - t0)
            listed = [
                json.loads(line)["unique_id"] for line in proc.stdout.splitlines() if line.startswith("{")
            ]
        home = Path(tmp) / "home"
        settings = _settings(home)
        publish_target_dir(StoreWriter(settings.store_root), target)
        server = _server(settings)
        answered = asyncio.run(_lineage_node_ids(server))
        if answered != set(listed):
            raise SystemExit(
                "dbt ls and dbt_get_lineage list different nodes; the comparison would not be fair: "
                f"only dbt ls {sorted(set(listed) - answered)}, only MCP {sorted(answered - set(listed))}"
            )
        question = {"ls": LINEAGE_QUESTION, "noop": ("bench_noop", {})}
        mcp = asyncio.run(_measure(server, question, iterations))
        shutil.rmtree(logs, ignore_errors=True)
    dbt_ls_ms = statistics.median(samples) * 1000
    return {
        "dbt_ls_median_ms": round(dbt_ls_ms, 1),
        "dbt_ls_nodes": len(listed),
        "mcp_p50_ms": mcp["ls"]["mcp"]["p50_ms"],
        "mcp_nodes": mcp["ls"]["answer_nodes"],
        "ratio_dbt_ls_over_mcp": round(dbt_ls_ms / mcp["ls"]["mcp"]["p50_ms"], 1),
    }


def _print(size: dict[str, Any]) -> None:
    print(
        f"\n{size['nodes']:,} nodes (manifest {size['manifest_mb']} MB): ingest {size['ingest_s']} s, "
        f"first query {size['first_query_s']} s"
    )
    star = size["select_star"]
    print(
        f"  dbt_find_select_star first call: {star['first_call_on_demand_s']} s scanned on demand, "
        f"{star['first_call_from_asset_s']} s from the dbt_select_star asset ({star['asset_materialize_s']} s to "
        "materialize)"
    )
    print(
        f"  {'question (ms)':<24}{'work p50':>10}{'work p95':>10}{'cpu p50':>9}{'mcp p50':>10}{'mcp p95':>10}"
        f"{'x noop':>8}{'nodes':>7}{'KB':>6}"
    )
    for label, r in size["tools"].items():
        print(
            f"  {label:<24}{r['work']['p50_ms']:>10.3f}{r['work']['p95_ms']:>10.3f}{r['work_cpu']['p50_ms']:>9.3f}"
            f"{r['mcp']['p50_ms']:>10.3f}{r['mcp']['p95_ms']:>10.3f}{r['mcp_vs_noop']:>8.2f}"
            f"{r['answer_nodes'] or '':>7}{r['answer_bytes'] / 1000:>6.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few iterations")
    parser.add_argument("--sizes", help="comma-separated node counts (default 1000,10000,50000)")
    parser.add_argument("--iterations", type=int, help="calls per question (default 300; 30 with --quick)")
    parser.add_argument("--no-dbt-ls", action="store_true", help="skip the dbt ls comparison")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    sizes = [int(s) for s in (args.sizes or ("1000,5000" if args.quick else "1000,10000,50000")).split(",")]
    iterations = args.iterations or (30 if args.quick else 300)
    report: dict[str, Any] = {"python": sys.version.split()[0], "sizes": []}
    for n in sizes:
        size = bench_size(n, iterations)
        report["sizes"].append(size)
        _print(size)
    if not args.no_dbt_ls:
        ls = bench_dbt_ls(iterations)
        report["dbt_ls"] = ls
        if ls:
            print(
                f"\ndbt ls {' '.join(DBT_LS_SELECT)} on dbt_demo: {ls['dbt_ls_median_ms']} ms "
                f"({ls['dbt_ls_nodes']} nodes) vs MCP dbt_get_lineage {ls['mcp_p50_ms']} ms ({ls['mcp_nodes']} nodes, "
                "the same set): "
                f"{ls['ratio_dbt_ls_over_mcp']}x"
            )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
