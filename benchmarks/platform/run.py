"""Store read latency (warm and cold) and MCP cold start to first answer.

    python -m benchmarks.platform.run [--quick] [--cold-start-only]

Warm: a reader whose cache already holds the latest version (the bridge's steady state).
Cold: a new reader (a fresh process's first read: pointer + provenance + data files + checksum + parse).
Cold start: spawning `ade mcp` with every toolset on over stdio until the first dbt_get_lineage answer
arrives, interleaved with a one-tool FastMCP server spawned the same way (the floor any MCP server pays).
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
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    from ade_platform.config import load_settings

    settings = load_settings(ALL_TOOLSETS_CONFIG, env={"ADE_HOME": str(home)})
    StoreWriter(settings.store_root).publish(
        "dbt_lineage_index", build_lineage_index(synthetic_manifest(1000))
    )
    ade = str(Path(sys.executable).parent / "ade")
    ade_env = {"ADE_HOME": str(home), "ADE_CONFIG": str(ALL_TOOLSETS_CONFIG)}

    async def first_answer(
        command: str, args: list[str], env: dict[str, str], tool: str, arguments: dict
    ) -> float:
        started = time.perf_counter()
        async with Client(StdioTransport(command=command, args=args, env=env)) as client:
            await client.call_tool(tool, arguments)
        return time.perf_counter() - started

    async def ade_round() -> float:
        lineage = {"node_id": "model.synthetic.mart_0", "direction": "upstream"}
        return await first_answer(ade, ["mcp"], ade_env, "dbt_get_lineage", lineage)

    async def floor_round() -> float:
        quiet = {"FASTMCP_LOG_LEVEL": "WARNING"}  # as quiet on stderr as `ade mcp`
        return await first_answer(sys.executable, ["-c", FLOOR_SERVER], quiet, "ping", {})

    ade_times, floor_times = [], []
    for _ in range(repeats):  # interleaved: both sides see the same machine load
        ade_times.append(asyncio.run(ade_round()))
        floor_times.append(asyncio.run(floor_round()))
    print(
        f"MCP cold start, all {len(settings.mcp.toolsets)} toolsets on (spawn `ade mcp` over stdio -> first "
        f"dbt_get_lineage answer), {repeats} interleaved runs"
    )
    print(f"    ade    {fmt_ms(ade_times)}")
    print(f"    floor  {fmt_ms(floor_times)}   (a one-tool FastMCP server, spawned the same way)")
    ratio = pct(ade_times, 50) / pct(floor_times, 50)
    extra = (pct(ade_times, 50) - pct(floor_times, 50)) * 1000
    print(f"    ratio of p50s {ratio:.2f}x the floor; ADE adds {extra:.0f} ms (target: p50 under 1500 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--cold-start-only", action="store_true", help="skip the store read latencies")
    args = parser.parse_args()
    sizes = [1000, 10_000] if args.quick else [1000, 10_000, 50_000]
    with tempfile.TemporaryDirectory() as tmp:
        if not args.cold_start_only:
            for n in sizes:
                store_latency(Path(tmp) / f"s{n}", n, repeats=200 if args.quick else 2000)
        cold_start(Path(tmp) / "cold", repeats=3 if args.quick else 10)


if __name__ == "__main__":
    main()
