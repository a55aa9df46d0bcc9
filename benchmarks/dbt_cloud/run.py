"""dbt Cloud: cached vs live `dbtcloud_get_last_run`, and the overhead of one `dbtcloud_poll_run` status check.

    python -m benchmarks.dbt_cloud.run [--quick]

Against the local dbt Cloud emulator (its jobs run dbt-core; one `dbt parse` run is made first).
- last run, cached: a tracked job answered from the `dbt_cloud_runs` snapshot, through MCP (in-memory client).
- last run, live: the same question for an untracked job, through MCP (API call + audited fast path).
- direct: what a user does otherwise, one authenticated GET /runs/?job_definition_id=..&order_by=-id&limit=1.
- poll: `dbtcloud_poll_run` on a finished run (exactly one status check) vs a direct GET /runs/<id>/; the
  difference is the tool's overhead per status check.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from fastmcp import Client

from ade_platform.clients.dbt_cloud import DbtCloudClient
from ade_platform.emulators.dbt_cloud import CI_JOB, DAILY_JOB
from ade_platform.lib import dbt_cloud as lib
from ade_platform.store import StoreWriter
from benchmarks.timing import fmt_ms, pct, quick_mode, timed
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt_cloud import build


def _wait(client: DbtCloudClient, run_id: int) -> None:
    while client.get_run(run_id, steps=False)["status"] not in lib.TERMINAL:
        time.sleep(1)


async def _timed_calls(server: Any, name: str, args: dict[str, Any], repeats: int) -> list[float]:
    times = []
    async with Client(server) as client:
        await client.call_tool(name, args)  # warm: first call builds the HTTP client and the live runner
        for _ in range(repeats):
            started = time.perf_counter()
            result = await client.call_tool(name, args, raise_on_error=False)
            times.append(time.perf_counter() - started)
            assert not result.is_error, result.content
    return times


def main() -> None:
    quick = quick_mode()
    repeats = 20 if quick else 50
    from tests.mcp.dbt_cloud_support import running_emulator

    with tempfile.TemporaryDirectory() as tmp, running_emulator(Path(tmp), history=False) as emu:
        settings = emu.settings()  # tracks 7301 (cached answers), not 7302 (live)
        section = settings.dbt_cloud
        assert section is not None
        direct = DbtCloudClient.from_settings(section)
        run = direct.trigger_job(CI_JOB, "benchmark", ["dbt parse"])
        _wait(direct, run["id"])
        also = direct.trigger_job(DAILY_JOB, "benchmark", ["dbt parse"])
        _wait(direct, also["id"])
        # The cached side: the snapshot the dbt_cloud_runs asset writes, for the tracked job.
        runs = [lib.run_record(r) for r in direct.list_runs(DAILY_JOB, limit=20)]
        StoreWriter(settings.store_root).publish(
            "dbt_cloud_runs", {"account_id": section.account_id, "runs": runs}
        )
        server = build(BridgeContext.from_settings(settings))

        cached = asyncio.run(
            _timed_calls(server, "dbtcloud_get_last_run", {"job_id": DAILY_JOB, "status": None}, repeats)
        )
        live = asyncio.run(
            _timed_calls(server, "dbtcloud_get_last_run", {"job_id": CI_JOB, "status": None}, repeats)
        )
        http = timed(lambda: direct.last_run(CI_JOB), repeats, warm=True)
        poll = asyncio.run(_timed_calls(server, "dbtcloud_poll_run", {"run_id": run["id"]}, repeats))
        get_run = timed(lambda: direct.get_run(run["id"]), repeats, warm=True)
        direct.close()
        from ade_platform.live import flush_all

        flush_all(600)  # every audit run (one per live call) lands before the temporary Dagster home goes

    print(f"dbtcloud_get_last_run, {repeats} calls each (emulator on loopback)")
    print(f"    cached (dbt_cloud_runs snapshot)  {fmt_ms(cached)}")
    print(f"    live (API + audited fast path)    {fmt_ms(live)}")
    print(f"    direct GET /runs/?limit=1         {fmt_ms(http)}")
    print(
        f"    live / cached  {pct(live, 50) / pct(cached, 50):6.1f}x   direct / cached  {pct(http, 50) / pct(cached, 50):6.1f}x"
    )
    print("dbtcloud_poll_run on a finished run (one status check)")
    print(f"    poll through MCP                  {fmt_ms(poll)}")
    print(f"    direct GET /runs/<id>/            {fmt_ms(get_run)}")
    print(f"    overhead per status check  p50 {(pct(poll, 50) - pct(get_run, 50)) * 1000:8.3f} ms")


if __name__ == "__main__":
    main()
