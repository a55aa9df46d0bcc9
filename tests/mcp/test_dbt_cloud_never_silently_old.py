"""The dbt-cloud tools never answer silently old (issue 27): a tracked job's snapshot answers only when one call to
dbt Cloud finds nothing newer; otherwise the answer comes from dbt Cloud, or says `stale` with the reason when dbt
Cloud cannot be reached. Against the dbt Cloud emulator, which really runs dbt_demo with dbt-core."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client

from ade_platform.config import Settings
from ade_platform.emulators.dbt_cloud import DAILY_JOB, FRESHNESS_GATE_JOB, PRODUCTION_ENV, PROJECT_ID
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt_cloud import build
from tests.helpers import call_tool
from tests.mcp.dbt_cloud_support import Emulator, running_emulator

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with running_emulator(tmp_path_factory.mktemp("dbtcloud-fresh"), history=False) as emu:
        yield emu


def _run_to_end(server: Any, job_id: int, cause: str) -> dict[str, Any]:
    ok, run = call_tool(server, "dbtcloud_trigger_job", {"job_id": job_id, "cause": cause})
    assert ok, run

    async def poll() -> dict[str, Any]:
        async with Client(server) as client:
            result = await client.call_tool(
                "dbtcloud_poll_run", {"run_id": run["run_id"], "timeout_seconds": 900}
            )
        return result.structured_content

    polled = asyncio.run(poll())
    assert polled["status"] in ("success", "error") and not polled["timed_out"], polled
    return polled


def _materialize(settings: Settings) -> None:
    from ade_platform.ops import materialize

    log = io.StringIO()
    assert materialize(settings, "group:dbt_cloud", out=log) == 0, log.getvalue()[-3000:]


def test_trigger_poll_then_last_run_is_the_new_run(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    # The inventory is of one environment; the snapshot keeps one run per tracked job.
    settings = emulator.settings(extra=f"  environment_id: {PRODUCTION_ENV}\n  recent_runs: 1\n")
    server = build(BridgeContext.from_settings(settings))
    failed = _run_to_end(server, FRESHNESS_GATE_JOB, "the gate fails: payments are stale")
    _materialize(settings)  # the runs snapshot: the gate's failed run, no run of the daily job

    # trigger -> poll -> get_last_run: the new run, not "no matching run" from the snapshot taken before it.
    run = _run_to_end(server, DAILY_JOB, "daily build")
    assert run["status"] == "success", run
    ok, last = call_tool(server, "dbtcloud_get_last_run", {"job_id": DAILY_JOB})
    assert ok, last
    assert last["run_id"] == run["run_id"] and last["provenance"]["source"] == "live", last
    ok, fresh = call_tool(server, "dbtcloud_get_source_freshness", {"job_id": DAILY_JOB})
    assert ok and fresh["run_id"] == run["run_id"] and fresh["provenance"]["source"] == "live", fresh

    # environment_id null lists every environment's jobs, though the snapshot holds one environment's.
    ok, jobs = call_tool(server, "dbtcloud_list_jobs", {"project_id": PROJECT_ID, "environment_id": None})
    assert ok and jobs["count"] == 3 and jobs["provenance"]["source"] == "live", jobs
    ok, production = call_tool(
        server, "dbtcloud_list_jobs", {"project_id": PROJECT_ID, "environment_id": PRODUCTION_ENV}
    )
    assert ok and production["provenance"]["source"] == "cache", production
    assert production["provenance"]["stale"] is False
    assert {j["environment_id"] for j in production["jobs"]} == {PRODUCTION_ENV}

    # Once the snapshot holds the newest run, it answers (dbt Cloud was asked, and had nothing newer).
    _materialize(settings)
    ok, cached = call_tool(server, "dbtcloud_get_last_run", {"job_id": DAILY_JOB})
    assert ok and cached["run_id"] == run["run_id"], cached
    assert cached["provenance"]["source"] == "cache" and cached["provenance"]["stale"] is False
    ok, fresh = call_tool(server, "dbtcloud_get_source_freshness", {"job_id": DAILY_JOB})
    assert ok and fresh["run_id"] == run["run_id"] and fresh["provenance"]["source"] == "cache", fresh

    # A newer failed run of the gate than the snapshot's: the newer one, from dbt Cloud.
    again = _run_to_end(server, FRESHNESS_GATE_JOB, "the gate fails again")
    ok, last = call_tool(server, "dbtcloud_get_last_run", {"job_id": FRESHNESS_GATE_JOB, "status": "Error"})
    assert ok and last["run_id"] == again["run_id"] != failed["run_id"], last

    # dbt Cloud out of reach: the snapshot answers, saying it may be stale and why.
    assert settings.dbt_cloud is not None
    dead = settings.dbt_cloud.model_copy(
        update={"base_url": "http://127.0.0.1:9/api/v2", "timeout_seconds": 2}
    )
    offline = build(BridgeContext.from_settings(settings.model_copy(update={"dbt_cloud": dead})))
    ok, old = call_tool(offline, "dbtcloud_get_last_run", {"job_id": DAILY_JOB})
    assert ok and old["run_id"] == run["run_id"], old
    assert old["provenance"]["stale"] is True and "connection_failed" in old["provenance"]["stale_reason"]
