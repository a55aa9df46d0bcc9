"""Snowflake: guardrail classification time per statement, and the proxy's overhead over plain `snow sql`.

    python -m benchmarks.snowflake.run [--quick] [--transports-only] [--sessions-only]

Classification: `classify_sql` (sqlglot AST, Snowflake dialect, exclusion checks) over a few hundred
real-world-shaped statements plus both guard corpora, p50/p95 per statement.
Transports: the same statement as a plain `snow sql -q ... --format JSON_EXT` subprocess, and through
`execute_sql` (classify -> wrap -> run -> redact) on each transport (`snow` CLI, connector session), directly
and through MCP (in-memory client), against one local fakesnow server, in interleaved rounds; ratios of
medians. Skipped when `snow` is not installed.
Sessions: what keeping withheld (DATA) results off the answering session costs on the connector transport,
next to one shared session and to the alternative (a cheap statement after each withheld result), plus the
guard's session-state scan per statement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ade_platform.clients.snow_cli import SnowCli
from ade_platform.lib.guard import GuardPolicy, classify_sql
from ade_platform.lib.snowflake.proxy import Proxy, ProxyLimits
from benchmarks.snowflake.queries import corpora, real_world
from benchmarks.timing import pct, timed

HERE = Path(__file__).parent
POLICY = GuardPolicy(
    exclusion_patterns=("PROD_*", "*_BACKUP", "*.HR.*", "*PII*"),
    default_database="ANALYTICS",
    default_schema="MARTS",
)
STATEMENTS = {
    "DATA": "SELECT * FROM customers",
    "SCALAR": "SELECT COUNT(*) FROM customers",
    "METADATA": "SHOW TABLES",
}


def bench_classification(quick: bool) -> None:
    statements = real_world(150 if quick else 400) + corpora()
    for sql in statements[:20]:
        classify_sql(sql, POLICY)  # warm sqlglot's caches
    per = []
    for sql in statements:
        started = time.perf_counter()
        classify_sql(sql, POLICY)
        per.append(time.perf_counter() - started)
    long = [t for s, t in zip(statements, per, strict=True) if len(s) > 600]
    print(f"classification, {len(statements)} statements ({len(long)} dbt-style models over 600 chars)")
    print(
        f"    all     p50 {pct(per, 50) * 1000:7.2f} ms   p95 {pct(per, 95) * 1000:7.2f} ms   max {max(per) * 1000:7.2f} ms"
    )
    if long:
        print(f"    models  p50 {pct(long, 50) * 1000:7.2f} ms   p95 {pct(long, 95) * 1000:7.2f} ms")


def _honest() -> list[tuple[str, bool]]:
    """honest.sql: (statement, expected allowed); a trailing `-- DATA: why` marks the honest exceptions."""
    out = []
    for line in (HERE / "honest.sql").read_text().splitlines():
        if line.strip() and not line.startswith("--"):
            sql, _, note = line.partition(" -- DATA:")
            out.append((sql if note else line, not note))
    return out


def bench_precision(quick: bool) -> None:
    """Share of honest analyst statements allowed (METADATA/SCALAR) next to adversarial ones (must be 0)."""
    honest = _honest()
    attacks = [json.loads(x) for x in (HERE / "adversarial.jsonl").read_text().splitlines() if x.strip()]
    policy = GuardPolicy()
    repeats = 3 if quick else 15
    for sql, _ in honest[:20]:
        classify_sql(sql, policy)  # warm sqlglot's caches
    times: list[float] = []
    verdicts: dict[str, str] = {}
    for _ in range(repeats):
        for sql in [s for s, _ in honest] + [c["sql"] for c in attacks]:
            started = time.perf_counter()
            verdicts[sql] = classify_sql(sql, policy).classification
            times.append(time.perf_counter() - started)
    allowed = [s for s, _ in honest if verdicts[s] in ("METADATA", "SCALAR")]
    leaks = [c for c in attacks if c["must"] == "DATA" and verdicts[c["sql"]] in ("METADATA", "SCALAR")]
    side_effects = [c for c in attacks if c["must"] == "WRITE"]
    executed = [c for c in side_effects if verdicts[c["sql"]] != "WRITE"]
    print(f"guard precision, default policy ({len(honest)} honest statements, {len(attacks)} adversarial)")
    print(
        f"    honest allowed      {len(allowed):4d} / {len(honest):4d}  ({100 * len(allowed) / len(honest):5.1f} %)"
        f"   expected {sum(ok for _, ok in honest)}"
    )
    leak_cases = len(attacks) - len(side_effects)
    print(f"    adversarial allowed {len(leaks):4d} / {leak_cases:4d}  (leaks)")
    print(f"    side effects not WRITE {len(executed):4d} / {len(side_effects):4d}")
    print(
        f"    classification p50 {pct(times, 50) * 1000:6.3f} ms   p95 {pct(times, 95) * 1000:6.3f} ms"
        f"   ({repeats} passes)"
    )


def bench_proxy_work(quick: bool) -> None:
    """What the proxy adds besides the CLI call: classify, wrap, filter/redact, VARIANT inference."""
    from tests.fakes.snowflake_runner import ScriptedRunner

    rows = [
        {
            "_ADE_PRESENT": True,
            "ID": i,
            "EMAIL": f"u{i}@x.com" if i % 3 else None,
            "PROFILE": {"plan": "p", "n": i},
        }
        for i in range(1000)
    ]
    show = [{"name": f"T{i}", "database_name": "DB", "schema_name": "APP"} for i in range(1000)]
    answers = {"DATA": rows, "SCALAR": [{"N": 1000}], "METADATA": show}
    repeats = 20 if quick else 100
    print(f"proxy work outside the CLI call (1,000-row results, {repeats} runs)")
    for kind, sql in STATEMENTS.items():
        runner = ScriptedRunner(lambda q, kind=kind: answers[kind], database="DB", schema="APP")
        proxy = Proxy(
            runner, GuardPolicy(exclusion_patterns=("*.PROD_HR.*",)), ProxyLimits(max_stat_rows=10_000)
        )
        times = timed(lambda sql=sql, proxy=proxy: proxy.execute_sql(sql), repeats)
        print(f"    {kind:8} p50 {pct(times, 50) * 1000:7.2f} ms   p95 {pct(times, 95) * 1000:7.2f} ms")


def bench_proxy(quick: bool) -> None:
    """Both transports against the same fakesnow server in one run, per statement, rounds interleaved."""
    from ade_platform.clients.snow_connector import SnowConnector
    from tests.fakes.snowflake_stack import CONNECTION, DATABASE, SCHEMA, snow_cli, start_stack

    if snow_cli() is None:
        print("proxy overhead: skipped (the snow CLI is not installed; `make setup`)")
        return
    repeats = 3 if quick else 7
    os.environ.pop("DAGSTER_HOME", None)  # audit runs of the MCP path go to the temporary ADE_HOME
    with tempfile.TemporaryDirectory() as tmp, start_stack(Path(tmp)) as stack:
        where = {"connection": CONNECTION, "config_file": str(stack.config_file), "timeout": 120}
        cli = SnowCli(cli_path=stack.cli, database=DATABASE, schema=SCHEMA, **where)
        connector = SnowConnector(database=DATABASE, schema=SCHEMA, **where)
        policy, limits = GuardPolicy(exclusion_patterns=("*.PROD_HR.*",)), ProxyLimits()
        proxies = {"cli": Proxy(cli, policy, limits), "connector": Proxy(connector, policy, limits)}
        servers = {t: _mcp_server(stack, Path(tmp), t) for t in ("cli", "connector")}
        for transport, (server, _) in servers.items():  # login / first process outside the timings
            proxies[transport].execute_sql("SHOW TABLES")
            _call(server, "SHOW TABLES")
        print(
            f"Snowflake per statement, both transports (fakesnow on loopback, {repeats} interleaved rounds, medians)"
        )
        print(
            f"    {'':8} {'snow sql':>9} {'cli proxy':>10} {'cli MCP':>9} {'conn proxy':>11} {'conn MCP':>9}"
            f" {'cli/conn MCP':>13} {'snow sql/conn MCP':>18}"
        )
        for kind, sql in STATEMENTS.items():
            argv = cli.command(["sql", "--query", sql, "--enable-templating", "NONE"])
            steps: dict[str, Callable[[], Any]] = {
                "plain": lambda argv=argv: subprocess.run(argv, capture_output=True, check=True),
                "cli": lambda sql=sql: proxies["cli"].execute_sql(sql),
                "cli_mcp": lambda sql=sql: _call(servers["cli"][0], sql),
                "connector": lambda sql=sql: proxies["connector"].execute_sql(sql),
                "connector_mcp": lambda sql=sql: _call(servers["connector"][0], sql),
            }
            times: dict[str, list[float]] = {name: [] for name in steps}
            for _ in range(repeats):
                for name, step in steps.items():
                    times[name] += timed(step, 1)
            ms = {name: statistics.median(values) * 1000 for name, values in times.items()}
            print(
                f"    {kind:8} {ms['plain']:7.0f}ms {ms['cli']:8.0f}ms {ms['cli_mcp']:7.0f}ms "
                f"{ms['connector']:9.1f}ms {ms['connector_mcp']:7.1f}ms {ms['cli_mcp'] / ms['connector_mcp']:12.0f}x"
                f" {ms['plain'] / ms['connector_mcp']:17.0f}x"
            )
        for _, ctx in servers.values():
            ctx.live().flush()  # the audit runs are written in the background; the folder goes away next


def bench_sessions(quick: bool) -> None:
    """Per DATA statement on the connector: a session of its own for withheld results (what ships), one shared
    session (before issue 23), and one shared session plus `SELECT 1` after each withheld result (the other
    way to move LAST_QUERY_ID() off it); a login (paid once per connection name for the second session); and
    the session-state token scan the guard adds to each classification."""
    from ade_platform.clients.snow_connector import Session, SnowConnector, connection_parameters
    from ade_platform.lib.guard import _tokens as tk
    from tests.fakes.snowflake_stack import CONNECTION, DATABASE, SCHEMA, start_stack

    class SharedSession(SnowConnector):
        def withheld(self) -> SnowConnector:
            return self

    class FollowedUp(SharedSession):
        def sql(self, query: str) -> list[dict[str, Any]]:
            rows = super().sql(query)
            if "_ADE_PRESENT" in query:
                super().sql("SELECT 1")  # LAST_QUERY_ID() now names this statement
            return rows

    repeats = 15 if quick else 60
    statements = real_world(150 if quick else 400) + corpora()
    tokens = [t for t in (tk.tokenize(s) for s in statements) if t is not None]
    scan = timed(lambda: [tk.session_reach(t) + tk.session_objects(t) for t in tokens], 3, warm=True)
    with tempfile.TemporaryDirectory() as tmp, start_stack(Path(tmp)) as stack:
        where = {"connection": CONNECTION, "config_file": str(stack.config_file), "timeout": 120}
        policy, limits = GuardPolicy(exclusion_patterns=("*.PROD_HR.*",)), ProxyLimits()
        variants = {
            "own session": SnowConnector(database=DATABASE, schema=SCHEMA, **where),
            "shared": SharedSession(database=DATABASE, schema=SCHEMA, **where),
            "shared + SELECT 1": FollowedUp(database=DATABASE, schema=SCHEMA, **where),
        }
        proxies = {name: Proxy(runner, policy, limits) for name, runner in variants.items()}
        times: dict[str, list[float]] = {name: [] for name in proxies}
        for proxy in proxies.values():
            proxy.execute_sql(STATEMENTS["DATA"])  # logins outside the timings
        for _ in range(repeats):
            for name, proxy in proxies.items():
                times[name] += timed(lambda proxy=proxy: proxy.execute_sql(STATEMENTS["DATA"]), 1)
        parameters = connection_parameters(CONNECTION, stack.config_file)

        def login() -> None:
            session = Session(parameters, 120)
            session.execute("SELECT 1", DATABASE, SCHEMA)
            session.close()

        logins = timed(login, 5 if quick else 15)
    print(f"Snowflake sessions: one DATA statement through the proxy, connector transport ({repeats} rounds)")
    base = statistics.median(times["shared"])
    for name, values in times.items():
        extra = (statistics.median(values) - base) * 1000
        print(f"    {name:18} p50 {pct(values, 50) * 1000:7.2f} ms   p95 {pct(values, 95) * 1000:7.2f} ms"
              f"   vs shared {extra:+6.2f} ms")  # fmt: skip
    print(f"    login (second session, once per connection name)  p50 {pct(logins, 50) * 1000:7.1f} ms")
    per = min(scan) / len(tokens) * 1e6
    print(f"    guard session-state scan  {per:6.1f} us per statement ({len(tokens)} statements)")


def _mcp_server(stack: Any, tmp: Path, transport: str) -> tuple[Any, Any]:
    from ade_platform.config import load_settings
    from mcp_bridge.context import BridgeContext
    from mcp_bridge.server import build_server

    settings = load_settings(stack.ade_yaml(tmp / f"ade-{transport}", transport=transport), env={})
    ctx = BridgeContext.from_settings(settings)
    return build_server(settings, ctx=ctx), ctx


def _call(server: Any, sql: str) -> Any:
    from fastmcp import Client

    async def go() -> Any:
        async with Client(server) as client:
            return await client.call_tool("execute_sql", {"query": sql})

    return asyncio.run(go())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer statements and runs")
    parser.add_argument(
        "--transports-only", action="store_true", help="only the per-statement transport figures"
    )
    parser.add_argument("--sessions-only", action="store_true", help="only the session-isolation figures")
    args = parser.parse_args()
    if args.sessions_only:
        bench_sessions(args.quick)
        return
    if not args.transports_only:
        bench_classification(args.quick)
        bench_precision(args.quick)
        bench_proxy_work(args.quick)
        bench_sessions(args.quick)
    bench_proxy(args.quick)


if __name__ == "__main__":
    main()
