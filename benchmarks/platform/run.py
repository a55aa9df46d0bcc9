"""Store read latency (warm and cold) and MCP cold start to first answer.

    python -m benchmarks.platform.run [--quick]

Warm: a reader whose cache already holds the latest version (the bridge's steady state).
Cold: a new reader (a fresh process's first read: pointer + provenance + data files + checksum + parse).
Cold start: spawning `ade mcp` over stdio until the first dbt_get_lineage answer arrives.
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


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def fmt_ms(values: list[float]) -> str:
    return f"p50 {pct(values, 50) * 1000:8.3f} ms   p95 {pct(values, 95) * 1000:8.3f} ms"


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


def cold_start(home: Path, repeats: int) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    StoreWriter(home / "store").publish("dbt_lineage_index", build_lineage_index(synthetic_manifest(1000)))
    ade = str(Path(sys.executable).parent / "ade")
    repo = Path(__file__).resolve().parents[2]

    async def first_answer() -> float:
        started = time.perf_counter()
        transport = StdioTransport(
            command=ade, args=["mcp"], env={"ADE_HOME": str(home), "ADE_CONFIG": str(repo / "ade.yaml")}
        )
        async with Client(transport) as client:
            await client.call_tool(
                "dbt_get_lineage", {"node_id": "model.synthetic.mart_0", "direction": "upstream"}
            )
        return time.perf_counter() - started

    times = [asyncio.run(first_answer()) for _ in range(repeats)]
    print(f"MCP cold start (spawn `ade mcp` over stdio -> first dbt_get_lineage answer), {repeats} runs")
    print(f"    {fmt_ms(times)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    sizes = [1000, 10_000] if args.quick else [1000, 10_000, 50_000]
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            store_latency(Path(tmp) / f"s{n}", n, repeats=200 if args.quick else 2000)
        cold_start(Path(tmp) / "cold", repeats=3 if args.quick else 10)


if __name__ == "__main__":
    main()
