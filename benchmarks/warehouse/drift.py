"""What observing one table live costs: `warehouse_detect_schema_drift` answered live vs from the snapshot.

    python -m benchmarks.warehouse.drift [--quick]

On DuckDB, the Snowflake fake (fakesnow server on loopback) and the BigQuery fake (REST on loopback): a
warehouse of N tables x 20 columns, a schema snapshot of it in the store, a dbt manifest declaring the model
`orders`. Then, through MCP (in-memory client, the gateway's warehouse toolset):
- live: the tool as it ships (one catalog query for the table + the audited fast path + the diff);
- cached: the same tool answering from the snapshot, i.e. what it did before it read the table live (measured
  by making the warehouse unreachable, so the tool falls back to the snapshot);
- the catalog query alone (`describe_table` on the client), the floor of the live answer.
The ratio live / cached (medians) is the price of an answer that sees a change made a second ago.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

from ade_platform.clients.warehouses import WarehouseError, warehouse_client
from ade_platform.config import BigQueryWarehouse, DuckDBWarehouse
from ade_platform.lib.warehouse.names import schema_asset
from ade_platform.live import LiveRunner
from ade_platform.store import StoreWriter
from benchmarks.timing import quick_mode, timed
from benchmarks.warehouse.run import COLUMNS, fmt, settings_for
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server

MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"
DECLARED = {"order_id": "bigint", "status": "varchar", "amount": "double"}


def publish_manifest(settings: Any, schema: str, database: str | None) -> None:
    manifest = {
        "metadata": {"dbt_schema_version": MANIFEST_SCHEMA, "project_name": "shop"},
        "nodes": {
            "model.shop.orders": {
                "resource_type": "model", "name": "orders", "package_name": "shop", "schema": schema,
                "database": database, "alias": "orders", "config": {"materialized": "table"},
                "depends_on": {"nodes": []},
                "columns": {name: {"name": name, "data_type": dtype} for name, dtype in DECLARED.items()},
            }
        },
        "sources": {},
    }  # fmt: skip
    StoreWriter(settings.store_root).publish(
        "dbt_manifest", files={"data.json": json.dumps(manifest).encode()}
    )


def ddl(schema: str, tables: int) -> list[str]:
    filler = ", ".join(f"c{i} varchar" for i in range(COLUMNS))
    statements = [f"create table {schema}.orders (order_id bigint, status varchar, amount double)"]
    statements += [f"create table {schema}.t{t:05d} ({filler})" for t in range(tables - 1)]
    return statements


class _Unreachable:
    """Stands in for a warehouse that cannot be reached (the benchmark's way to time the cached path)."""

    def __getattr__(self, name: str) -> Any:
        def fail(*_a: Any, **_k: Any) -> Any:
            raise WarehouseError("connection_failed", "benchmark: warehouse switched off")

        return fail


def measure(
    label: str, home: Path, name: str, wh: Any, schema: str, database: str | None, repeats: int
) -> None:
    settings = settings_for(home, {name: wh})
    client = warehouse_client(name, wh, 600)
    StoreWriter(settings.store_root).publish(schema_asset(name), client.snapshot())
    publish_manifest(settings, schema, database)
    parts = [database, schema, "orders"] if database else [schema, "orders"]
    catalog = timed(lambda: client.describe_table(parts), repeats)
    from fastmcp import Client

    async def calls(server: Any) -> list[float]:
        async with Client(server) as mcp:
            first = await mcp.call_tool("warehouse_detect_schema_drift", {"model_name": "orders"})
            assert first.structured_content["drift_detected"] is False, first.structured_content
            out = []
            for _ in range(repeats):
                started = time.perf_counter()
                await mcp.call_tool("warehouse_detect_schema_drift", {"model_name": "orders"})
                out.append(time.perf_counter() - started)
            return out

    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(home / "dagster")
    live = asyncio.run(calls(build_server(settings, only="warehouse", ctx=ctx)))
    # A gateway of its own (a gateway keeps the clients it opened), whose warehouse cannot be reached.
    offline = BridgeContext.from_settings(settings)
    offline._live = ctx._live
    with mock.patch("ade_platform.clients.warehouses.open_client", lambda *a, **k: _Unreachable()):
        cached = asyncio.run(calls(build_server(settings, only="warehouse", ctx=offline)))
    ctx._live.flush()
    client.close()
    ratio = statistics.median(live) / statistics.median(cached)
    print(f"single-table drift, {label}, {repeats} calls each")
    print(f"    catalog query alone (describe_table)       {fmt(catalog)}")
    print(f"    warehouse_detect_schema_drift, live        {fmt(live)}")
    print(f"    warehouse_detect_schema_drift, cached      {fmt(cached)}")
    print(f"    ratio live / cached (medians)              {ratio:9.1f} x")


def bench_duckdb(home: Path, tables: int, repeats: int) -> None:
    import duckdb

    home.mkdir(parents=True, exist_ok=True)
    db = home / "drift.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema shop")
    for statement in ddl("shop", tables):
        con.execute(statement)
    con.close()
    measure(
        f"DuckDB, {tables} tables",
        home,
        "duck",
        DuckDBWarehouse(type="duckdb", path=db),
        "shop",
        None,
        repeats,
    )


def bench_snowflake(home: Path, tables: int, repeats: int) -> None:
    from tests.processes import fakesnow_process, fakesnow_warehouse

    with fakesnow_process() as server:
        seed = ["create database BENCH", "create schema BENCH.SHOP", *ddl("BENCH.SHOP", tables)]
        wh = fakesnow_warehouse(server, "BENCH", seed, schemas=["SHOP"])
        measure(f"Snowflake fake (fakesnow), {tables} tables", home, "sf", wh, "SHOP", None, repeats)


def bench_bigquery(home: Path, tables: int, repeats: int) -> None:
    from tests.fakes.bigquery import FakeBigQuery

    with FakeBigQuery(project="bench") as fake:
        fake.sql("create schema shop; " + "; ".join(ddl("shop", tables)))
        wh = BigQueryWarehouse(type="bigquery", project="bench", datasets=["shop"], api_endpoint=fake.url)
        measure(f"BigQuery fake (REST), {tables} tables", home, "bq", wh, "shop", None, repeats)


def main() -> None:
    quick = quick_mode(__doc__)
    repeats = 10 if quick else 50
    tables = 50 if quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        bench_duckdb(home / "duck", tables, repeats)
        bench_snowflake(home / "sf", tables, repeats)
        bench_bigquery(home / "bq", tables, repeats)


if __name__ == "__main__":
    main()
