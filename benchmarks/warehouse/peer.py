"""`warehouse_execute` against `mcp-server-motherduck` (the DuckDB MCP server an agent would otherwise use).

    python -m benchmarks.warehouse.peer [--quick]

Both servers run as a user runs them: spawned over stdio, each from its own virtualenv (the peer's is
`.tools/motherduck`, installed by `make bench`), read-only on the same DuckDB file, which is written by the
peer's DuckDB so that both versions can read it. The peer keeps its defaults (read-only, a connection per
query so that other processes can write the file: the same promise ADE makes to Dagster's writers). Each
round sends every query to both servers, alternating which goes first; our gateway carries one extra no-op
tool (`benchmarks/warehouse/gateway.py`), the baseline round trip. Reported: medians and ratios (ours /
peer; count(*) / no-op).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from benchmarks.timing import quick_mode

REPO = Path(__file__).resolve().parents[2]
PEER_PYTHON = REPO / ".tools" / "motherduck" / "bin" / "python"
PEER_SERVER = REPO / ".tools" / "motherduck" / "bin" / "mcp-server-motherduck"
SIDES = ("ADE", "motherduck")
PER_QUERY = "ADE, hold_seconds: 0"  # on the wire only: the file attached for each query, not held between
ORDERS = 200_000
CUSTOMERS = 569
QUERIES = {
    "count(*) over 200k rows": "SELECT count(*) AS n FROM shop.orders",
    f"SELECT * of {CUSTOMERS} rows": "SELECT * FROM shop.customers ORDER BY customer_id",
    "GROUP BY over 200k rows": (
        "SELECT status, count(*) AS orders, sum(amount) AS amount FROM shop.orders GROUP BY status ORDER BY status"
    ),
}
_BUILD = f"""
import duckdb, sys
con = duckdb.connect(sys.argv[1])
con.execute("create schema shop")
con.execute(\"\"\"create table shop.customers as
    select i as customer_id, 'customer ' || i as name, 'c' || i || '@example.com' as email,
           date '2024-01-01' + (i % 365)::int as signed_up, (i % 7 = 0) as churned
    from range(1, {CUSTOMERS + 1}) t(i)\"\"\")
con.execute(\"\"\"create table shop.orders as
    select i as order_id, 1 + i % {CUSTOMERS} as customer_id,
           ['placed', 'shipped', 'completed', 'returned'][1 + i % 4] as status,
           round((i % 997) * 1.37, 2)::decimal(18, 2) as amount,
           timestamp '2024-01-01' + to_seconds(i * 60) as ordered_at
    from range({ORDERS}) t(i)\"\"\")
con.close()
"""


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def build_file(path: Path) -> None:
    subprocess.run([str(PEER_PYTHON), "-c", _BUILD, str(path)], check=True)


def write_config(home: Path, db: Path, hold_seconds: float | None = None) -> Path:
    """The gateway's settings: the defaults, or the file attached per query (`hold_seconds: 0`)."""
    config = home / ("ade.yaml" if hold_seconds is None else f"ade-hold-{hold_seconds:g}.yaml")
    hold = "" if hold_seconds is None else f"    hold_seconds: {hold_seconds:g}\n"
    config.write_text(
        f"home: {home}\n"
        f"warehouses:\n  bench:\n    type: duckdb\n    path: {db}\n{hold}"
        "mcp:\n  toolsets: [warehouse]\n"
        "limits:\n  max_rows: 1000\n"
    )
    return config


Call = Callable[[str, str], Awaitable[float]]  # (side, sql) -> seconds


def servers(home: Path, config: Path, db: Path) -> dict[str, tuple[str, list[str], dict[str, str]]]:
    """Command, arguments and environment of each side: our gateway (plus the no-op tool) and the peer."""

    def ade_env(config: Path, name: str) -> dict[str, str]:
        return {"ADE_HOME": str(home / name), "ADE_CONFIG": str(config), "PATH": "/usr/bin:/bin"}

    gateway = (sys.executable, ["-m", "benchmarks.warehouse.gateway"])
    return {
        "ADE": (*gateway, ade_env(config, "ade")),
        "motherduck": (str(PEER_SERVER), ["--db-path", str(db)], {"HOME": str(home)}),
        PER_QUERY: (*gateway, ade_env(write_config(home, db, hold_seconds=0), "ade-per-query")),
    }


async def interleaved(
    rounds: int, call: Call, noop: Callable[[], Awaitable[float]], sides: tuple[str, ...] = SIDES
) -> tuple[list[float], dict[tuple[str, str], list[float]]]:
    """Warm every side up, then run every query on each every round, alternating the order."""
    for sql in QUERIES.values():  # warm-up: first calls load drivers (and Dagster on our side)
        for side in sides:
            await call(side, sql)
    noops: list[float] = []
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        noops.append(await noop())
        for label, sql in QUERIES.items():
            for side in sides if r % 2 == 0 else sides[::-1]:
                times.setdefault((label, side), []).append(await call(side, sql))
    return noops, times


async def compare(home: Path, rounds: int) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport

    db = home / "warehouse.duckdb"
    build_file(db)
    config = write_config(home, db)
    transports = {
        side: StdioTransport(
            command=command, args=args, env=env, cwd=str(REPO), log_file=home / f"{side}.log"
        )
        for side, (command, args, env) in servers(home, config, db).items()
        if side in SIDES
    }
    async with Client(transports["ADE"]) as a, Client(transports["motherduck"]) as b:
        calls = {"ADE": (a, "warehouse_execute"), "motherduck": (b, "execute_query")}

        async def call(side: str, sql: str) -> float:
            client, tool = calls[side]
            started = time.perf_counter()
            result = await client.call_tool(tool, {"sql": sql}, raise_on_error=True)
            elapsed = time.perf_counter() - started
            assert not result.is_error
            return elapsed

        async def noop() -> float:
            started = time.perf_counter()
            await a.call_tool("bench_noop", {})
            return time.perf_counter() - started

        noops, times = await interleaved(rounds, call, noop)
    report(
        "through FastMCP's Client (a Python host: it validates each structured answer)", rounds, noops, times
    )
    await compare_on_the_wire(home, config, db, rounds)


def report(how: str, rounds: int, noop: list[float], times: dict[tuple[str, str], list[float]]) -> None:
    print(
        f"warehouse_execute vs mcp-server-motherduck (stdio, same DuckDB file), {rounds} interleaved rounds, {how}"
    )
    print(f"    no-op tool (MCP round trip)   ADE {median_ms(noop):8.2f} ms")
    for label in QUERIES:
        ade, other = median_ms(times[(label, "ADE")]), median_ms(times[(label, "motherduck")])
        print(
            f"    {label:<28}  ADE {ade:8.2f} ms   motherduck {other:8.2f} ms   "
            f"ratio ADE/motherduck {ade / other:5.2f} x"
        )
    count = median_ms(times[("count(*) over 200k rows", "ADE")])
    print(f"    ratio ADE count(*) / ADE no-op {count / median_ms(noop):5.2f} x   (target <= 2)")
    if ("count(*) over 200k rows", PER_QUERY) in times:
        per_query = median_ms(times[("count(*) over 200k rows", PER_QUERY)])
        print(
            f"    with hold_seconds: 0 (attached per query): count(*) {per_query:.2f} ms, "
            f"{per_query / median_ms(noop):.2f} x the no-op"
        )


async def compare_on_the_wire(home: Path, config: Path, db: Path, rounds: int) -> None:
    """The same rounds timed on the wire (benchmarks/wire.py): what each server takes, without the client
    library's validation of the answer (the peer publishes no output schema, so it is never validated)."""
    from benchmarks.wire import WireClient

    clients = {
        side: WireClient(command, args, env, cwd=REPO)
        for side, (command, args, env) in servers(home, config, db).items()
    }
    async with clients["ADE"] as a, clients["motherduck"] as b, clients[PER_QUERY] as c:
        calls = {
            "ADE": (a, "warehouse_execute"),
            "motherduck": (b, "execute_query"),
            PER_QUERY: (c, "warehouse_execute"),
        }

        async def call(side: str, sql: str) -> float:
            client, tool = calls[side]
            elapsed, result = await client.call(tool, {"sql": sql})
            assert not result.get("isError"), result
            return elapsed

        async def noop() -> float:
            return (await a.call("bench_noop", {}))[0]

        noops, times = await interleaved(rounds, call, noop, (*SIDES, PER_QUERY))
    report("on the wire (request written -> response read)", rounds, noops, times)


def main() -> None:
    quick = quick_mode(__doc__)
    if not PEER_SERVER.exists():
        print("mcp-server-motherduck is not installed (.tools/motherduck); run `make bench`")
        return
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(compare(Path(tmp), rounds=15 if quick else 60))


if __name__ == "__main__":
    main()
