"""Rows per second through the snowfakery toolset's run_recipe (MCP) vs the Snowfakery library directly.

    python -m benchmarks.snowfakery.run [--quick]

Then the comparison with the peer server, snowfakery-mcp (benchmarks/snowfakery/peer.py).

Three ways to generate the same CSV output of one recipe, at several sizes:
- direct:  `snowfakery.api.generate_data` in this process (what a script would do);
- sandbox: the library path of run_recipe (checks, a forked child with limits, run folder, summary);
- mcp:     `snowfakery.run_recipe` through the MCP protocol (in-memory client), which adds the audited
           Dagster run and the protocol round trip.
Each figure is the median of a few runs after a warm-up (the sandbox's zygote and Dagster load once).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

# 1 customer -> 3 orders -> 1 payment each: 7 rows per customer
RECIPE = """- snowfakery_version: 3
- option: customers
  default: 10
- object: customer
  count: ${{ int(customers) }}
  fields:
    name: ${{ fake.first_name }} ${{ fake.last_name }}
    email: ${{ fake.email }}
    since:
      date_between:
        start_date: -5y
        end_date: today
  friends:
    - object: order
      count: 3
      fields:
        customer_id:
          reference: customer
        amount: ${{ random_number(min=5, max=500) }}
        status:
          random_choice:
            placed: 20%
            shipped: 30%
            completed: 50%
      friends:
        - object: payment
          fields:
            order_id:
              reference: order
            method:
              random_choice: [card, transfer, voucher]
"""
ROWS_PER_CUSTOMER = 7


def direct(recipe: Path, customers: int, out: Path) -> float:
    from snowfakery.api import SnowfakeryApplication, generate_data

    class Quiet(SnowfakeryApplication):
        def echo(self, *args: object, **kwargs: object) -> None:
            pass

    started = time.perf_counter()
    generate_data(
        str(recipe),
        parent_application=Quiet(),
        user_options={"customers": customers},
        output_format="csv",
        output_folder=str(out),
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer repetitions")
    args = parser.parse_args(sys.argv[1:])
    sizes = [300, 3_000] if args.quick else [300, 3_000, 30_000]
    repeats = 2 if args.quick else 3

    import asyncio
    import os

    import yaml
    from fastmcp import Client

    from ade_platform.config import load_settings
    from ade_platform.lib.snowfakery.runs import RunParams, run_recipe
    from ade_platform.live import flush_all
    from mcp_bridge.server import build_server
    from mcp_bridge.toolsets.snowfakery.service import service_from_settings

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "dagster").mkdir()
        (root / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        os.environ["DAGSTER_HOME"] = str(root / "dagster")
        config = {
            "home": str(root / "home"),
            "mcp": {"toolsets": ["snowfakery"]},
            "snowfakery": {"timeout_seconds": 600, "max_runs_kept": 5},
        }
        (root / "ade.yaml").write_text(yaml.safe_dump(config))
        settings = load_settings(root / "ade.yaml", env={"DAGSTER_HOME": str(root / "dagster")})
        recipe = root / "bench.recipe.yml"
        recipe.write_text(RECIPE)
        service = service_from_settings(settings)
        source = service.source(recipe_text=RECIPE)
        server = build_server(settings, only="snowfakery")

        def sandbox(customers: int) -> float:
            params = RunParams(options={"customers": customers}, output_format="csv", capture_output=False)
            started = time.perf_counter()
            answer = run_recipe(service, source, params)
            elapsed = time.perf_counter() - started
            assert answer["summary"]["total_rows"] == customers * ROWS_PER_CUSTOMER
            return elapsed

        async def mcp(client: Client, customers: int) -> float:
            arguments = {
                "recipe_text": RECIPE,
                "options": {"customers": customers},
                "output_format": "csv",
                "capture_output": False,
            }
            started = time.perf_counter()
            result = await client.call_tool("snowfakery.run_recipe", arguments)
            elapsed = time.perf_counter() - started
            assert result.structured_content["summary"]["total_rows"] == customers * ROWS_PER_CUSTOMER
            # The audit run is recorded after the answer, in a niced child process: let it finish before the
            # next measurement, which it would otherwise slow down (on 2 cores), and before the home goes.
            flush_all()
            return elapsed

        async def measure() -> list[tuple[int, float, float, float]]:
            rows = []
            async with Client(server) as client:
                direct(recipe, 10, root / "warm")  # imports Snowfakery here
                sandbox(10)  # starts the zygote
                await mcp(client, 10)  # imports Dagster, creates the instance
                for customers in sizes:
                    timings: dict[str, list[float]] = {"direct": [], "sandbox": [], "mcp": []}
                    for i in range(repeats):
                        timings["direct"].append(direct(recipe, customers, root / f"direct-{customers}-{i}"))
                        timings["sandbox"].append(sandbox(customers))
                        timings["mcp"].append(await mcp(client, customers))
                    medians = {k: statistics.median(v) for k, v in timings.items()}
                    rows.append(
                        (customers * ROWS_PER_CUSTOMER, medians["direct"], medians["sandbox"], medians["mcp"])
                    )
            return rows

        results = asyncio.run(measure())

    print(f"snowfakery run_recipe vs library, csv output, median of {repeats} (rows/s, wall time)")
    print(f"{'rows':>8} {'direct':>16} {'sandbox':>16} {'mcp':>16} {'sandbox/direct':>15} {'mcp/direct':>11}")
    for rows, d, s, m in results:
        print(
            f"{rows:>8} {rows / d:>9.0f} {d:>5.2f}s {rows / s:>9.0f} {s:>5.2f}s {rows / m:>9.0f} {m:>5.2f}s"
            f" {d / s:>14.2f}x {d / m:>10.2f}x"
        )

    from benchmarks.snowfakery import peer

    print()
    peer.main()


if __name__ == "__main__":
    main()
