"""Warehouse: what a live op costs over a direct driver call, and how long a schema snapshot takes.

    python -m benchmarks.warehouse.run [--quick]

Live-op overhead: `warehouse_execute` of `SELECT 1` through MCP (in-memory client -> FastMCP -> SQL guard
-> an ad-hoc Dagster run in a local instance -> DuckDB read-only connection) against the same query
through the DuckDB driver directly (connect read-only, execute, fetch, close), as a ratio of medians.
Snapshot: INFORMATION_SCHEMA of a warehouse with N tables x 20 columns read and shaped into the store's
snapshot (DuckDB file; BigQuery through the REST fake), then published and answered by
warehouse_get_schema from the store.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

from ade_platform.clients.warehouses import warehouse_client
from ade_platform.config import BigQueryWarehouse, DuckDBWarehouse, load_settings
from ade_platform.live import LiveRunner
from ade_platform.store import StoreWriter
from benchmarks.timing import pct, quick_mode, timed
from benchmarks.warehouse import peer
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server

REPO = Path(__file__).resolve().parents[2]
COLUMNS = 20


def fmt(values: list[float]) -> str:
    return f"p50 {pct(values, 50) * 1000:9.2f} ms   p95 {pct(values, 95) * 1000:9.2f} ms"


def make_duckdb(path: Path, tables: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute("create schema if not exists bench")
    cols = ", ".join(
        f"c{i} {'bigint' if i % 3 == 0 else 'varchar' if i % 3 == 1 else 'timestamp'}" for i in range(COLUMNS)
    )
    for t in range(tables):
        con.execute(f"create table bench.t{t:05d} ({cols})")
    con.close()


def settings_for(home: Path, warehouses: dict[str, Any]) -> Any:
    settings = load_settings(REPO / "ade.yaml", env={"ADE_HOME": str(home)})
    return settings.model_copy(update={"warehouses": warehouses})


def live_overhead(home: Path, repeats: int) -> None:
    db = home / "live.duckdb"
    make_duckdb(db, 1)
    settings = settings_for(home, {"bench": DuckDBWarehouse(type="duckdb", path=db)})
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(home / "dagster")
    server = build_server(settings, only="warehouse", ctx=ctx)

    def direct() -> None:
        con = duckdb.connect(str(db), read_only=True)
        con.execute("SELECT 1").fetchall()
        con.close()

    client = warehouse_client("bench", settings.warehouses["bench"], 60)
    from fastmcp import Client

    async def through_mcp() -> tuple[list[float], list[float]]:
        async with Client(server) as mcp:
            await mcp.call_tool("warehouse_execute", {"sql": "SELECT 1"})  # warm-up: Dagster loads here
            times, in_run = [], []
            for _ in range(repeats):
                started = time.perf_counter()
                result = await mcp.call_tool("warehouse_execute", {"sql": "SELECT 1"})
                times.append(time.perf_counter() - started)
                in_run.append(result.structured_content["provenance"]["elapsed_ms"] / 1000)
            return times, in_run

    direct()
    driver = timed(direct, repeats)
    ours = timed(lambda: client.query("SELECT 1"), repeats)
    mcp, dagster_run = asyncio.run(through_mcp())
    ratio = statistics.median(mcp) / statistics.median(driver)
    print(f"live op overhead, SELECT 1 on DuckDB, {repeats} calls each")
    print(f"    driver direct (connect ro, execute, close)  {fmt(driver)}")
    print(f"    WarehouseClient.query                        {fmt(ours)}")
    print(f"    Dagster run inside the tool (LiveRunner)     {fmt(dagster_run)}")
    print(f"    warehouse_execute through MCP                {fmt(mcp)}")
    print(f"    ratio MCP live op / driver (medians)         {ratio:9.1f} x")


def snapshot_duckdb(home: Path, tables: int, repeats: int) -> None:
    db = home / f"snap{tables}.duckdb"
    make_duckdb(db, tables)
    settings = settings_for(home, {"bench": DuckDBWarehouse(type="duckdb", path=db)})
    client = warehouse_client("bench", settings.warehouses["bench"], 600)
    times = timed(client.snapshot, repeats)
    data = client.snapshot()
    writer = StoreWriter(settings.store_root)
    publish = timed(lambda: writer.publish("warehouse_schema_bench", data), repeats)
    server = build_server(settings, only="warehouse")
    from fastmcp import Client

    async def answers(arguments: Callable[[int], dict[str, Any]], calls: int) -> list[float]:
        async with Client(server) as mcp:
            await mcp.call_tool("warehouse_get_schema", arguments(0))
            out = []
            for i in range(calls):
                started = time.perf_counter()
                await mcp.call_tool("warehouse_get_schema", arguments(i))
                out.append(time.perf_counter() - started)
            return out

    # One table is read live (issue 9: right at the moment of an incident); a whole schema from the snapshot.
    one_table = asyncio.run(
        answers(lambda i: {"schema_name": "bench", "table_name": f"t{i % tables:05d}"}, repeats * 5)
    )
    catalog = timed(lambda: client.describe_table(["bench", "t00001"]), repeats * 5)
    whole = asyncio.run(answers(lambda i: {"schema_name": "bench"}, repeats * 5))
    print(
        f"schema snapshot, DuckDB, {tables} tables x {COLUMNS} columns ({data['column_count']} columns), {repeats} runs"
    )
    print(f"    INFORMATION_SCHEMA -> snapshot   {fmt(times)}")
    print(f"    publish to the store             {fmt(publish)}")
    print(f"    warehouse_get_schema, one table (live catalog query)     {fmt(one_table)}")
    print(f"        the catalog query alone (describe_table)             {fmt(catalog)}")
    print(f"    warehouse_get_schema, whole schema (snapshot, capped)    {fmt(whole)}")


def snapshot_bigquery(tables: int, repeats: int) -> None:
    from tests.fakes.bigquery import FakeBigQuery

    with FakeBigQuery(project="bench") as fake:
        cols = ", ".join(f"c{i} {'bigint' if i % 2 else 'varchar'}" for i in range(COLUMNS))
        fake.sql(
            "create schema ds; " + "; ".join(f"create table ds.t{t:05d} ({cols})" for t in range(tables))
        )
        client = warehouse_client(
            "bq",
            BigQueryWarehouse(type="bigquery", project="bench", datasets=["ds"], api_endpoint=fake.url),
            600,
        )
        client.snapshot()
        times = timed(client.snapshot, repeats)
    print(
        f"schema snapshot, BigQuery REST fake, {tables} tables x {COLUMNS} columns, {repeats} runs (one query per dataset)"
    )
    print(f"    INFORMATION_SCHEMA -> snapshot   {fmt(times)}")


def main() -> None:
    quick = quick_mode(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        live_overhead(home / "live", repeats=20 if quick else 100)
        snapshot_duckdb(home / "snap", tables=1000, repeats=3 if quick else 10)
        snapshot_bigquery(tables=1000, repeats=2 if quick else 5)
        from benchmarks.warehouse import drift  # live single-table drift vs the cached answer

        repeats, tables = (10, 50) if quick else (50, 200)
        drift.bench_duckdb(home / "drift-duck", tables, repeats)
        drift.bench_snowflake(home / "drift-sf", tables, repeats)
        drift.bench_bigquery(home / "drift-bq", tables, repeats)
    peer.main()


if __name__ == "__main__":
    main()
