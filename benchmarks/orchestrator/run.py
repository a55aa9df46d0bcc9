"""Orchestrators: the orchestrator tools against a real Prefect 3 server, next to what a user does otherwise.

    python -m benchmarks.orchestrator.run [--quick]

Starts `prefect server start` from .tools/prefect (`make orchestrators`) on loopback, runs the flows of
tests/orchestrators/prefect_flows.py (a failed dbt build, a retried task, a successful flow), then times the
same questions three ways, interleaved round by round:

- the last failed run of a flow: `orchestrator_get_last_run` through MCP (live, audited fast path) vs one
  POST /flow_runs/filter (httpx: what a script does) vs `prefect flow-run ls` (what a user types);
- a week of run history: `orchestrator_get_run_history` answered from the `orchestrator_runs_prefect`
  snapshot (plus its one-call staleness check) vs live vs the direct REST call;
- the failed task's log: `orchestrator_fetch_logs` vs POST /logs/filter;
- the failure signature of that log: `orchestrator_detect_patterns` (built-in signatures) vs nothing to compare
  with but reading it (reported on its own).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from fastmcp import Client

from ade_platform.clients.orchestrators import snapshot_runs
from ade_platform.clients.orchestrators.prefect import PrefectClient
from ade_platform.config import OrchestratorSettings, PrefectSettings, load_settings
from ade_platform.emulators.demo import free_port
from ade_platform.live import flush_all
from ade_platform.store import StoreWriter
from benchmarks.timing import fmt_ms, pct, quick_mode
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.orchestrators.servers import prefect_env

REPO = Path(__file__).resolve().parents[2]
PREFECT = REPO / ".tools" / "prefect" / "bin"
FLOWS = REPO / "tests" / "orchestrators" / "prefect_flows.py"


def _start_prefect(home: Path) -> tuple[subprocess.Popen, dict[str, str], dict[str, Any]]:
    port = free_port()
    env = prefect_env(home, port)
    url = env["PREFECT_API_URL"]
    log = (home / "server.log").open("w")
    proc = subprocess.Popen(
        [str(PREFECT / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    started = time.monotonic()
    while True:
        try:
            if httpx.get(f"{url}/health", timeout=3).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() - started > 180:
            raise SystemExit(f"the Prefect server did not start; see {home / 'server.log'}")
        time.sleep(1)
    print(f"prefect server up in {time.monotonic() - started:.0f} s", flush=True)
    flows = subprocess.run(
        [str(PREFECT / "python"), str(FLOWS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return proc, env, json.loads(flows.stdout.strip().splitlines()[-1])


async def _mcp(client: Client, name: str, args: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await client.call_tool(name, args, raise_on_error=False)
    elapsed = time.perf_counter() - started
    assert not result.is_error, result.content
    return elapsed


def _timed(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def _cli_last_failed(env: dict[str, str]) -> None:
    subprocess.run(
        [str(PREFECT / "prefect"), "flow-run", "ls", "--flow-name", "nightly_dbt", "--state", "FAILED",
         "--limit", "1"],
        env=env, capture_output=True, check=True, timeout=120,
    )  # fmt: skip


def _line(label: str, times: list[float]) -> None:
    print(f"    {label:<44}{fmt_ms(times)}")


def _ratio(label: str, slow: list[float], fast: list[float]) -> None:
    print(f"    {label:<44}{pct(slow, 50) / pct(fast, 50):8.1f}x")


async def _bench(
    server: Any, api: httpx.Client, ids: dict[str, Any], env: dict[str, str], rounds: int
) -> None:
    t: dict[str, list[float]] = {}

    def add(key: str, value: float) -> None:
        t.setdefault(key, []).append(value)

    base = {
        "dag_id": "nightly_dbt",
        "run_id": ids["failed_run"],
        "task_id": "dbt_build",
        "backend": "prefect",
    }
    failed_filter = {
        "flows": {"name": {"any_": ["nightly_dbt"]}},
        "flow_runs": {"state": {"type": {"any_": ["FAILED"]}}},
        "sort": "START_TIME_DESC",
        "limit": 1,
    }
    since = (datetime.now(UTC) - timedelta(days=7)).isoformat()
    history_filter = {
        "flows": {"name": {"any_": ["hello"]}},
        "flow_runs": {"start_time": {"after_": since}},
        "sort": "START_TIME_DESC",
        "limit": 200,
    }
    async with Client(server) as client:
        log_text = ""
        for name, args in [  # warm-up: HTTP clients, the live runner, the audit worker
            (
                "orchestrator_get_last_run",
                {"dag_id": "nightly_dbt", "status": "FAILED", "backend": "prefect"},
            ),
            ("orchestrator_fetch_logs", base),
        ]:
            result = await client.call_tool(name, args)
            log_text = (result.structured_content or {}).get("log_text", log_text)
        for _ in range(rounds):
            add("last_mcp", await _mcp(
                client, "orchestrator_get_last_run",
                {"dag_id": "nightly_dbt", "status": "FAILED", "backend": "prefect"},
            ))  # fmt: skip
            add(
                "last_rest",
                _timed(lambda: api.post("/flow_runs/filter", json=failed_filter).raise_for_status()),
            )
            add("hist_cached", await _mcp(
                client, "orchestrator_get_run_history", {"dag_id": "hello", "backend": "prefect"}
            ))  # fmt: skip
            add("hist_live", await _mcp(
                client, "orchestrator_get_run_history", {"dag_id": "nightly_dbt", "backend": "prefect"}
            ))  # fmt: skip
            add(
                "hist_rest",
                _timed(lambda: api.post("/flow_runs/filter", json=history_filter).raise_for_status()),
            )
            add("logs_mcp", await _mcp(client, "orchestrator_fetch_logs", base))
            add("logs_rest", _timed(lambda: api.post(
                "/logs/filter", json={"logs": {"flow_run_id": {"any_": [ids["failed_run"]]}}, "limit": 200}
            ).raise_for_status()))  # fmt: skip
            add("patterns", await _mcp(client, "orchestrator_detect_patterns", {"log_text": log_text}))
        cli = [_timed(lambda: _cli_last_failed(env)) for _ in range(max(3, rounds // 10))]
    print(f"orchestrator tools against a Prefect 3 server on loopback, {rounds} rounds")
    print("  last failed run of a flow")
    _line("orchestrator_get_last_run (MCP, live)", t["last_mcp"])
    _line("POST /flow_runs/filter (httpx)", t["last_rest"])
    _line(f"`prefect flow-run ls` ({len(cli)} runs)", cli)
    _ratio("MCP / direct REST", t["last_mcp"], t["last_rest"])
    _ratio("CLI / MCP", cli, t["last_mcp"])
    print("  a week of run history")
    _line("orchestrator_get_run_history (cached)", t["hist_cached"])
    _line("orchestrator_get_run_history (live)", t["hist_live"])
    _line("POST /flow_runs/filter (httpx)", t["hist_rest"])
    _ratio("live / cached", t["hist_live"], t["hist_cached"])
    print("  the failed task's log")
    _line("orchestrator_fetch_logs (MCP)", t["logs_mcp"])
    _line("POST /logs/filter (httpx)", t["logs_rest"])
    _ratio("MCP / direct REST", t["logs_mcp"], t["logs_rest"])
    print("  failure signatures of that log")
    _line(f"orchestrator_detect_patterns ({len(log_text)} chars)", t["patterns"])


def main() -> None:
    quick = quick_mode(__doc__)
    from benchmarks.orchestrator import hostile

    hostile.main()  # needs no server
    if not (PREFECT / "prefect").exists():
        print("skipped: Prefect is not installed (make orchestrators)")
        return
    rounds = 10 if quick else 40
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "prefect").mkdir()
        proc, env, ids = _start_prefect(root / "prefect")
        try:
            prefect = PrefectSettings(api_url=env["PREFECT_API_URL"], flows=["hello"])
            demo = load_settings(REPO / "ade.yaml", env={**os.environ, "ADE_HOME": str(root / "ade")})
            settings = demo.model_copy(update={"orchestrators": OrchestratorSettings(prefect=prefect)})
            # The cached side: the snapshot the orchestrator_runs_prefect asset writes for the tracked flow.
            client = PrefectClient.from_settings(prefect)
            since = datetime.now(UTC) - timedelta(days=settings.orchestrators.history_days)
            StoreWriter(settings.store_root).publish(
                "orchestrator_runs_prefect",
                snapshot_runs(client, ["hello"], since, previous=None, secrets=[]),
            )
            server = build_server(settings, only="orchestrator", ctx=BridgeContext.from_settings(settings))
            with httpx.Client(base_url=env["PREFECT_API_URL"], timeout=30) as api:
                asyncio.run(_bench(server, api, ids, env, rounds))
            flush_all(600)  # every audit run lands before the temporary Dagster home goes
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)


if __name__ == "__main__":
    main()
