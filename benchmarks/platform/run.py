"""Store read latency (warm and cold), MCP cold start to the tool list and first answer, and what the tool list
costs a host's context.

    python -m benchmarks.platform.run [--quick] [--cold-start-only] [--context-only]

Warm: a reader whose cache already holds the latest version (the bridge's steady state).
Cold: a new reader (a fresh process's first read: pointer + provenance + data files + checksum + parse).
Cold start: spawning `ade mcp` with every toolset on over stdio, as an MCP host does (initialize, tools/list, a
first dbt_get_lineage call), with the listing and tool schemas an earlier start wrote (mcp_bridge/listing.py,
tool_schemas.py) and without them (the first start after an install, an upgrade or a settings change), interleaved with a one-tool FastMCP server spawned the same way (the floor
any FastMCP server pays). The start-up target is the tools/list: `ade mcp` within 1.2x the floor's.
Context: the tools/list of the same gateway as a host receives it: the model-facing part (names, descriptions,
input schemas: what a host puts in its model's context) in characters and in tokens approximated as
characters / 4 (no tokenizer is installed; JSON schemas tokenize denser than prose, so this is a floor), the
gateway's instructions the same way, and the output schemas every client downloads and validates.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import StoreReader, StoreWriter
from benchmarks.synthetic import synthetic_manifest
from benchmarks.timing import fmt_ms, pct


def store_latency(root: Path, nodes: int, repeats: int) -> None:
    index = build_lineage_index(synthetic_manifest(nodes))
    prov = StoreWriter(root).publish("dbt_lineage_index", index)
    size = (root / "dbt_lineage_index" / "versions" / prov.version / "data.json").stat().st_size
    cold = []
    for _ in range(max(3, repeats // 20)):
        started = time.perf_counter()
        snap = StoreReader(root).latest("dbt_lineage_index")
        snap.data  # noqa: B018  (parse included: that is what a first answer pays)
        cold.append(time.perf_counter() - started)
    reader = StoreReader(root)
    reader.latest("dbt_lineage_index").data  # noqa: B018
    warm = []
    for _ in range(repeats):
        started = time.perf_counter()
        reader.latest("dbt_lineage_index").data  # noqa: B018
        warm.append(time.perf_counter() - started)
    print(f"store read, lineage index of {nodes:>6} nodes ({size / 1e6:6.1f} MB)")
    print(f"    warm  {fmt_ms(warm)}")
    print(f"    cold  {fmt_ms(cold)}")


# The floor: a FastMCP server with one tool, spawned the same way (same interpreter, stdio). What ADE adds to a
# cold start is its config, its toolsets and the store read; Python and the MCP SDK are paid by any server.
FLOOR_SERVER = """
from fastmcp import FastMCP
server = FastMCP("floor")
@server.tool
def ping() -> str:
    return "pong"
server.run(transport="stdio", show_banner=False)
"""
# Every toolset on, every section configured (loopback addresses nobody serves): also the import-boundary
# contract test's config, so the benchmark measures the configuration the test keeps lean.
ALL_TOOLSETS_CONFIG = Path(__file__).resolve().parents[2] / "tests" / "contract" / "ade.all_toolsets.yaml"


def cold_start(home: Path, repeats: int) -> None:
    import shutil

    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    from ade_platform.config import load_settings

    settings = load_settings(ALL_TOOLSETS_CONFIG, env={"ADE_HOME": str(home)})
    StoreWriter(settings.store_root).publish(
        "dbt_lineage_index", build_lineage_index(synthetic_manifest(1000))
    )
    ade = str(Path(sys.executable).parent / "ade")
    ade_env = {"ADE_HOME": str(home), "ADE_CONFIG": str(ALL_TOOLSETS_CONFIG)}
    schema_cache = home / "cache"

    async def session(
        command: str, args: list[str], env: dict[str, str], tool: str, arguments: dict
    ) -> tuple[float, float, float]:
        """What an MCP host does on start: spawn and initialize, list the tools, call one. Seconds to each."""
        started = time.perf_counter()
        async with Client(StdioTransport(command=command, args=args, env=env)) as client:
            initialized = time.perf_counter()
            await client.list_tools()
            listed = time.perf_counter()
            await client.call_tool(tool, arguments)
            answered = time.perf_counter()
        return initialized - started, listed - started, answered - started

    lineage = {"node_id": "model.synthetic.mart_0", "direction": "upstream"}

    def ade_start(cached: bool) -> tuple[float, float, float]:
        if (
            not cached
        ):  # the first start after an install, an upgrade or a settings change: no listing, no schemas
            shutil.rmtree(schema_cache, ignore_errors=True)
        return asyncio.run(session(ade, ["mcp"], ade_env, "dbt_get_lineage", lineage))

    def floor_start() -> tuple[float, float, float]:
        quiet = {"FASTMCP_LOG_LEVEL": "WARNING"}  # as quiet on stderr as `ade mcp`
        return asyncio.run(session(sys.executable, ["-c", FLOOR_SERVER], quiet, "ping", {}))

    ade_start(cached=False)  # untimed: writes the schema cache the cached starts read
    runs: dict[str, list[tuple[float, float, float]]] = {"cached": [], "first": [], "floor": []}
    for _ in range(repeats):  # interleaved: every side sees the same machine load
        runs["cached"].append(ade_start(cached=True))
        runs["floor"].append(floor_start())
        runs["first"].append(ade_start(cached=False))
        ade_start(cached=True)  # untimed: puts the cache back for the next round
    print(
        f"MCP cold start, all {len(settings.mcp.toolsets)} toolsets on: spawn over stdio, initialize, tools/list, "
        f"first dbt_get_lineage answer; {repeats} interleaved rounds (p50, ms)"
    )
    print(f"    {'':44} {'initialized':>12} {'listed':>9} {'answered':>9}   answered p95")
    labels = {
        "cached": "ade mcp (listing and schemas cached)",
        "first": "ade mcp, first start (all derived)",
        "floor": "floor: a one-tool FastMCP server",
    }
    for key, label in labels.items():
        phases = [[run[i] for run in runs[key]] for i in range(3)]
        cells = " ".join(f"{pct(p, 50) * 1000:>9.0f}" for p in phases)
        print(f"    {label:44} {cells[:9]:>12} {cells[10:]}   {pct(phases[2], 95) * 1000:9.0f}")
    listed = {key: pct([run[1] for run in runs[key]], 50) for key in runs}
    for key in ("cached", "first"):
        print(
            f"    tools/list, {labels[key]}: {listed[key] / listed['floor']:.2f}x the floor's "
            f"({listed[key] * 1000:.0f} vs {listed['floor'] * 1000:.0f} ms; target 1.20x)"
        )
    answered = {key: pct([run[2] for run in runs[key]], 50) for key in runs}
    for key in ("cached", "first"):
        print(
            f"    {labels[key]}: {answered[key] / answered['floor']:.2f}x the floor, "
            f"ADE adds {(answered[key] - answered['floor']) * 1000:.0f} ms"
        )
    print(
        f"    target: answered p50 under 1500 ms (cached: {answered['cached'] * 1000:.0f} ms); "
        f"machine speed: {machine_speed():.2f} s for a 10M-step Python loop"
    )


# The model-facing budget of issue 35: names + descriptions + input schemas of every tool, all toolsets on.
MODEL_FACING_TARGET = 40_000  # characters, ~10,000 tokens at chars/4


def all_toolsets_listing(home: Path) -> tuple[list[dict], str]:
    """The tools/list of the gateway with every toolset on, as a host receives it, and its instructions."""
    from fastmcp import Client

    from ade_platform.config import load_settings
    from mcp_bridge.server import build_server

    settings = load_settings(ALL_TOOLSETS_CONFIG, env={"ADE_HOME": str(home)})
    server = build_server(settings)

    async def listing() -> list[dict]:
        async with Client(server) as client:
            result = await client.session.list_tools()
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in result.tools]

    return asyncio.run(listing()), server.instructions or ""


def listing_sizes(tools: list[dict]) -> dict[str, int]:
    """Characters of each part of a tools/list, schemas as sent on the wire (compact JSON)."""
    import json

    def size(value: object) -> int:
        return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))

    sizes = {
        "names": sum(len(t["name"]) for t in tools),
        "descriptions": sum(len(t.get("description") or "") for t in tools),
        "inputs": sum(size(t["inputSchema"]) for t in tools),
        "outputs": sum(size(t["outputSchema"]) for t in tools if t.get("outputSchema")),
        "whole": size({"tools": tools}),
    }
    sizes["model_facing"] = sizes["names"] + sizes["descriptions"] + sizes["inputs"]
    return sizes


def context_cost(home: Path) -> None:
    """What the gateway's tools/list (every toolset on) costs a host: model-facing size and output schemas."""
    tools, instructions = all_toolsets_listing(home)
    sizes = listing_sizes(tools)
    model_facing = sizes["model_facing"]
    print(f"tools/list of ade mcp, all toolsets on: {len(tools)} tools")
    print(
        f"    model-facing (names {sizes['names'] / 1000:.1f} + descriptions {sizes['descriptions'] / 1000:.1f} "
        f"+ input schemas {sizes['inputs'] / 1000:.1f} kB): {model_facing / 1000:.1f} kB, "
        f"~{model_facing // 4:,} tokens (chars/4; target {MODEL_FACING_TARGET // 4:,})"
    )
    print(
        f"    gateway instructions (sent once, at initialize): {len(instructions) / 1000:.1f} kB, "
        f"~{len(instructions) // 4:,} tokens"
    )
    print(f"    output schemas: {sizes['outputs'] / 1000:.1f} kB (target: half of 225 kB, 112.5 kB)")
    print(f"    whole tools/list result: {sizes['whole'] / 1000:.1f} kB")


def machine_speed() -> float:
    """Seconds for a fixed pure-Python loop: compares this run's machine with another day's."""
    started = time.perf_counter()
    total = 0
    for i in range(10_000_000):
        total += i
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cold-start-only", action="store_true", help="skip the store read latencies")
    parser.add_argument("--context-only", action="store_true", help="only the tools/list's size")
    args = parser.parse_args()
    sizes = [1000, 10_000] if args.quick else [1000, 10_000, 50_000]
    with tempfile.TemporaryDirectory() as tmp:
        context_cost(Path(tmp) / "context")
        if args.context_only:
            return
        if not args.cold_start_only:
            for n in sizes:
                store_latency(Path(tmp) / f"s{n}", n, repeats=200 if args.quick else 2000)
        cold_start(Path(tmp) / "cold", repeats=3 if args.quick else 10)


if __name__ == "__main__":
    main()
