"""Cached answers under many clients (issue 35, item 3): the demo gateway over HTTP against a no-op FastMCP tool,
side by side in the same run.

    python -m benchmarks.serve.run [--quick] [--home DIR]

Two servers run as processes of their own, both served by uvicorn on loopback as `ade mcp --transport http`
serves: `ade mcp` on the materialized demo (every demo toolset on) and a FastMCP server with one no-op tool
(`benchmarks/serve/noop.py`, the floor). N clients at once (1, 16, 64), each its own MCP session, call the
cached tools in turn (`dbt_get_failed_models`, `fs_list_models`, `dbt_get_lineage`, `dbt_get_model_tests`), or
the no-op; then the same with one of the N reading a table live (`warehouse_get_schema` of one table: a catalog
query on DuckDB, audited). Each (level, server) pair runs `rounds` times, alternating which server goes first;
the figures are the median round's. The clients are `benchmarks/serve/load.py` (raw JSON-RPC over httpx: no
output-schema validation in the client), in this process.

Reported per level: calls/s, latency p50/p99, the server's CPU per call (user + system time of its process over
the round / calls: steadier than latency on a shared machine), errors, and the ratios the issue sets targets for:
p50 at one client <= 1.5 x the no-op's, throughput at 16 and 64 clients >= 50 % of the no-op's. `--home` reuses a
materialized demo home (`ade materialize` with ADE_HOME=DIR); without it the demo is materialized into a temporary
folder first (about 2 minutes).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.serve.load import Call, Load, run_load
from benchmarks.timing import pct
from tests.processes import free_port, stop, wait_for_http

REPO = Path(__file__).resolve().parents[2]
CACHED: list[Call] = [
    ("dbt_get_failed_models", {}),
    ("fs_list_models", {}),
    ("dbt_get_lineage", {"node_id": "model.dbt_demo.stg_orders", "direction": "downstream"}),
    ("dbt_get_model_tests", {"model_name": "orders"}),
]
LIVE: Call = ("warehouse_get_schema", {"schema_name": "main", "table_name": "orders"})
NOOP: list[Call] = [("noop", {})]
SLICES = 8  # at one client, each round alternates the servers this many times


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process so far (Linux /proc; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _served(args: list[str], env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """A server process listening on a free port: (MCP URL, pid); stopped on exit."""
    port = free_port()
    proc = subprocess.Popen(
        [*args, "--port", str(port)], env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_for_http(url, proc, timeout=180)  # a start on a busy machine takes a while
        yield url, proc.pid
    finally:
        stop(proc)


def _materialized(home: Path) -> None:
    from ade_platform.config import load_settings
    from ade_platform.ops import materialize

    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    settings = load_settings(REPO / "ade.yaml", env={**env, "ADE_HOME": str(home)})
    log = io.StringIO()
    started = time.perf_counter()
    if materialize(settings, "*", out=log) != 0:
        raise RuntimeError(f"demo materialization failed:\n{log.getvalue()[-2000:]}")
    print(f"(demo materialized in {time.perf_counter() - started:.0f} s)", flush=True)


class Measured:
    """One round: the load's figures and the server's CPU time over it."""

    def __init__(self, load: Load, cpu: float | None):
        self.load, self.cpu = load, cpu

    @property
    def cpu_ms_per_call(self) -> float | None:
        calls = len(self.load.latencies) + self.load.errors
        return self.cpu / calls * 1000 if self.cpu is not None and calls else None


def _round(
    url: str, pid: int, clients: int, calls: list[Call], per_client: int, live: Call | None
) -> Measured:
    # the CPU reading brackets the timed calls only (sessions opened and warmed before it starts)
    load = asyncio.run(run_load(url, clients, calls, per_client, live=live, cpu=lambda: _cpu_seconds(pid)))
    return Measured(load, load.cpu_seconds)


def _merged(slices: list[Measured]) -> Measured:
    """The slices of one round as one measurement: samples pooled, wall and CPU time added."""
    load = Load(slices[0].load.clients)
    cpu: float | None = 0.0
    for part in slices:
        load.latencies += part.load.latencies
        for name, values in part.load.by_tool.items():
            load.by_tool.setdefault(name, []).extend(values)
        load.seconds += part.load.seconds
        load.errors += part.load.errors
        cpu = None if cpu is None or part.cpu is None else cpu + part.cpu
    return Measured(load, cpu)


def _median_round(rounds: list[Measured]) -> Measured:
    ordered = sorted(rounds, key=lambda m: m.load.throughput)
    return ordered[len(ordered) // 2]


def _row(label: str, m: Measured, only: str | None = None) -> str:
    lat = m.load.by_tool.get(only, []) if only else m.load.latencies
    cpu = m.cpu_ms_per_call
    cpu_text = f"{cpu:8.2f}" if cpu is not None else "       -"
    return (
        f"    {label:34s}{m.load.throughput:9.0f}{pct(lat, 50) * 1000:10.1f}{pct(lat, 99) * 1000:10.1f}"
        f"{cpu_text}{m.load.errors:8d}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and rounds")
    parser.add_argument(
        "--home", type=Path, help="a materialized demo home (ADE_HOME); default: materialize one"
    )
    parser.add_argument("--rounds", type=int, help="rounds per figure (default 2; --quick: 1)")
    parser.add_argument("--calls", type=int, help="calls per round, split among the clients (default 640)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.quick else 2)
    calls_per_level = args.calls or (200 if args.quick else 640)
    levels = (1, 16, 64)
    with tempfile.TemporaryDirectory() as tmp:
        home = args.home
        if home is None:
            home = Path(tmp) / "ade"
            _materialized(home)
        env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
        env.update({"ADE_HOME": str(home), "PYTHONPATH": str(REPO), "PY_KEY_VALUE_DISABLE_BEARTYPE": "true"})
        ade_args = [str(Path(sys.executable).parent / "ade"), "mcp", "--transport", "http"]
        noop_args = [sys.executable, "-m", "benchmarks.serve.noop"]
        with _served(ade_args, env) as (ade_url, ade_pid), _served(noop_args, env) as (noop_url, noop_pid):
            sides = {
                "no-op FastMCP tool": (noop_url, noop_pid, NOOP),
                "ADE cached tools": (ade_url, ade_pid, CACHED),
            }
            results: dict[tuple[str, int, bool], list[Measured]] = {}
            plan = [(n, False) for n in levels] + [(n, True) for n in levels[1:]]
            for r in range(rounds):
                for clients, mixed in plan:
                    # one client's latency is compared in slices that alternate between the servers, so that
                    # both see the same moments of a shared machine; many clients in one slice each
                    slices = SLICES if clients == 1 else 1
                    per_client = max(4, calls_per_level // clients // slices)
                    parts: dict[str, list[Measured]] = {side: [] for side in sides}
                    for i in range(slices):
                        order = list(sides) if (r + i) % 2 == 0 else list(reversed(sides))
                        for side in order:
                            url, pid, calls = sides[side]
                            live = LIVE if mixed and side == "ADE cached tools" else None
                            parts[side].append(_round(url, pid, clients, calls, per_client, live))
                    for side in sides:
                        measured = _merged(parts[side])
                        print(
                            f"  round {r + 1}, {clients} clients{' + live' if mixed else ''}, {side}: "
                            f"{measured.load.throughput:.0f} calls/s",
                            file=sys.stderr,
                            flush=True,
                        )
                        results.setdefault((side, clients, mixed), []).append(measured)
    _report(results, levels, rounds)


def _report(
    results: dict[tuple[str, int, bool], list[Measured]], levels: tuple[int, ...], rounds: int
) -> None:
    load = os.getloadavg()
    print(
        f"Cached answers over HTTP vs a no-op FastMCP tool, {rounds} round(s) per figure (median round); "
        f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"    {'clients, server':34s}{'calls/s':>9}{'p50 ms':>10}{'p99 ms':>10}{'cpu ms':>8}{'errors':>8}")
    noop, ade = "no-op FastMCP tool", "ADE cached tools"
    for mixed in (False, True):
        if mixed:
            print("  with one client reading a table live (warehouse_get_schema, audited) among them:")
        for clients in levels:
            if (ade, clients, mixed) not in results:
                continue
            floor = _median_round(results.get((noop, clients, mixed)) or results[(noop, clients, False)])
            mine = _median_round(results[(ade, clients, mixed)])
            if not mixed:
                print(_row(f"{clients:3d}  {noop}", floor))
            print(_row(f"{clients:3d}  {ade}" + (" + live" if mixed else ""), mine))
            if mixed:
                live = mine.load.by_tool.get(LIVE[0], [])
                print(
                    f"         of which {LIVE[0]}: {len(live)} calls, p50 {pct(live, 50) * 1000:.1f} ms, "
                    f"p99 {pct(live, 99) * 1000:.1f} ms"
                )
            cached = [v for name, vs in mine.load.by_tool.items() if name != LIVE[0] for v in vs]
            ratio_p50 = pct(cached, 50) / pct(floor.load.latencies, 50)
            share = mine.load.throughput / floor.load.throughput
            cpu = (
                f"; CPU per call {mine.cpu_ms_per_call / floor.cpu_ms_per_call:.2f} x"
                if mine.cpu_ms_per_call and floor.cpu_ms_per_call
                else ""
            )
            target = " (target <= 1.5 x)" if clients == 1 else " (target >= 50 %)"
            print(
                f"         p50 {ratio_p50:.2f} x the no-op's, throughput {share * 100:.0f} % of it{cpu}{target}"
            )
    spread = {
        f"{side} {clients}{' mix' if mixed else ''}": statistics.pstdev([m.load.throughput for m in ms])
        for (side, clients, mixed), ms in results.items()
        if len(ms) > 1
    }
    if spread:
        worst = max(spread, key=spread.get)  # type: ignore[arg-type]
        print(f"    largest round-to-round spread of calls/s: {worst} ({spread[worst]:.0f}/s)")


if __name__ == "__main__":
    main()
