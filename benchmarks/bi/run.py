"""BI: what bi_verify_row_counts costs against running the same tiles one by one with looker-sdk, and what
the cached bi_list_dashboards saves over asking Looker.

    python -m benchmarks.bi.run [--quick]

A synthetic warehouse (DuckDB) with the demo's mart tables at N orders backs the Looker emulator (started on a
free port). Row counts: `bi_verify_row_counts` through MCP (in-memory client -> FastMCP -> tiles run 4 at a
time -> looker-sdk -> emulator -> DuckDB) against a plain script a user would write: looker-sdk, each tile's
query run in turn. Listing: `bi_list_dashboards` from the inventory snapshot against `search_dashboards` live.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import httpx

from ade_platform.clients.bi import open_client
from ade_platform.config import load_settings
from ade_platform.emulators.demo import free_port
from ade_platform.emulators.looker import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET
from ade_platform.lib.bi.inventory import collect_inventory
from ade_platform.live import LiveRunner
from ade_platform.store import StoreWriter
from benchmarks.timing import quick_mode, timed
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server

REPO = Path(__file__).resolve().parents[2]


def make_warehouse(path: Path, orders: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    con.execute(
        f"""create table main.orders as
        select i as order_id, i % 500 as customer_id, date '2025-01-01' + (i % 365)::int as order_date,
               ['completed', 'shipped', 'placed', 'returned'][1 + i % 4] as status,
               (i % 97) * 1.5 as amount, (i % 97) * 1.5 as total_paid
        from range({orders}) t(i)"""
    )
    con.execute(
        """create table main.customers as
        select i as customer_id, now() as customer_since, date '2025-01-01' as first_order_date,
               i % 7 as number_of_orders, i * 2.0 as lifetime_value from range(500) t(i)"""
    )
    con.execute(
        """create table main.fct_payments_daily as
        select order_date, 'credit_card' as payment_method, count(*) as payment_count, sum(amount) as amount
        from main.orders group by 1"""
    )
    con.close()


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def main() -> None:
    quick = quick_mode()
    repeats = 3 if quick else 10
    orders = 100_000 if quick else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "ade"
        warehouse = home / "warehouse" / "demo.duckdb"
        make_warehouse(warehouse, orders)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ade_platform.emulators.looker",
                "--port",
                str(port),
                "--warehouse",
                str(warehouse),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(100):
                try:
                    httpx.get(f"{url}/api/versions", timeout=1)
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            env = {
                **os.environ,
                "ADE_HOME": str(home),
                "ADE_LOOKER_URL": url,
                "ADE_LOOKER_CLIENT_ID": DEMO_CLIENT_ID,
                "ADE_LOOKER_CLIENT_SECRET": DEMO_CLIENT_SECRET,
                "ADE_METABASE_URL": "",
            }
            settings = load_settings(REPO / "ade.yaml", env=env)
            client = open_client(settings, "looker")
            inventory = collect_inventory(client)
            StoreWriter(settings.store_root).publish("bi_inventory_looker", inventory, run_id="bench")
            ctx = BridgeContext.from_settings(settings)
            ctx._live = LiveRunner(home / "dagster")
            server = build_server(settings, only="bi-api", ctx=ctx)
            from fastmcp import Client

            async def call(name: str, arguments: dict[str, Any]) -> None:
                async with Client(server) as c:
                    result = await c.call_tool(name, arguments)
                    assert not result.is_error

            def via_mcp() -> None:
                asyncio.run(call("bi_verify_row_counts", {"tool": "looker", "dashboard_id": "1"}))

            import looker_sdk
            from looker_sdk.rtl import api_settings

            class Plain(api_settings.ApiSettings):
                def read_config(self) -> api_settings.SettingsConfig:
                    return {"client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET, "base_url": url}

            sdk = looker_sdk.init40(config_settings=Plain())

            def by_hand() -> None:
                for e in sdk.dashboard("1").dashboard_elements:
                    if e.look_id:
                        sdk.run_look(e.look_id, "json")
                    elif e.query_id:
                        sdk.run_query(e.query_id, "json")

            via_mcp()
            by_hand()  # warm both paths (imports, tokens)
            mcp_times = timed(via_mcp, repeats)
            hand_times = timed(by_hand, repeats)
            ctx.live().flush()

            def cached() -> None:
                asyncio.run(call("bi_list_dashboards", {"tool": "looker"}))

            def live_list() -> None:
                sdk.search_dashboards(fields="id,title,folder,created_at,updated_at,view_count")

            cached_times = timed(cached, repeats * 3)
            live_times = timed(live_list, repeats * 3)
        finally:
            proc.terminate()
            proc.wait(10)
    print(f"orders: {orders:,}; dashboard 1 of the Looker emulator (4 tiles with a query, 1 text tile)")
    print(f"bi_verify_row_counts via MCP (4 at a time): median {median_ms(mcp_times):8.1f} ms")
    print(f"looker-sdk script, tiles in turn:          median {median_ms(hand_times):8.1f} ms")
    print(f"  ratio MCP / script: {median_ms(mcp_times) / median_ms(hand_times):.2f}")
    print(f"bi_list_dashboards (cached):               median {median_ms(cached_times):8.1f} ms")
    print(f"search_dashboards (live, looker-sdk):      median {median_ms(live_times):8.1f} ms")
    print(f"  ratio cached / live: {median_ms(cached_times) / median_ms(live_times):.2f}")


if __name__ == "__main__":
    main()
