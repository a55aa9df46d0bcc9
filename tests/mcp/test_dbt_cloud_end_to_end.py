"""dbt Cloud end to end through MCP: the emulator really runs dbt_demo with dbt-core; trigger -> poll (progress
notifications) -> artifacts -> freshness, a failing job, and the dbt Cloud artifacts feeding the dbt tools."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastmcp import Client

from ade_platform.emulators.dbt_cloud import DAILY_JOB, DEMO_TOKEN, FRESHNESS_GATE_JOB
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt_cloud import build
from tests.helpers import call_tool
from tests.mcp.dbt_cloud_support import Emulator, running_emulator

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with running_emulator(tmp_path_factory.mktemp("dbtcloud-e2e"), history=False) as emu:
        yield emu


async def _poll_with_progress(
    server: Any, run_id: int, emulator: Emulator | None = None
) -> tuple[dict[str, Any], list[tuple[float, str | None]]]:
    """Poll run_id to the end, collecting the progress notifications; with emulator, the emulator's held run
    queue is released at the first notification (so the poll is seen waiting at least once)."""
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))
        if emulator is not None and len(seen) == 1:
            await asyncio.to_thread(emulator.hold_runs, False)

    # 2025-11-25: the wait answers on the call, with progress notifications. On 2026-07-28 a FastMCP client drives
    # dbtcloud_poll_run as a task, whose progress is the task's status message (tests/mcp/test_protocol_revisions.py)
    async with Client(server, progress_handler=on_progress, mode="legacy") as client:
        result = await client.call_tool("dbtcloud_poll_run", {"run_id": run_id, "timeout_seconds": 900})
    return result.structured_content, seen


def test_trigger_poll_fetch_and_freshness(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = emulator.settings(extra="  max_artifact_bytes: 100000\n")
    server = build(BridgeContext.from_settings(settings))
    cause = "Agent-triggered: end-to-end test"
    with emulator.runs_held():  # queued until the poll has reported waiting for it
        ok, run = call_tool(server, "dbtcloud_trigger_job", {"job_id": DAILY_JOB, "cause": cause})
        assert ok, run
        assert run["status"] == "queued", run
        polled, progress = asyncio.run(_poll_with_progress(server, run["run_id"], emulator))
    assert polled["status"] == "success" and polled["timed_out"] is False, polled
    assert progress and all(f"run {run['run_id']}" in (m or "") for _, m in progress)
    assert "queued" in (progress[0][1] or ""), progress[0]
    assert polled["status_checks"] == len(progress) + 1
    names = [s["name"] for s in polled["steps"]]
    assert names == ["dbt source freshness", "dbt build", "dbt docs generate"]
    assert all(s["duration_seconds"] is not None and s["duration_seconds"] >= 0 for s in polled["steps"])
    assert polled["duration_seconds"] and polled["duration_seconds"] > 0

    # Small artifact: inlined as dbt wrote it.
    ok, results = call_tool(
        server, "dbtcloud_fetch_artifact", {"run_id": run["run_id"], "artifact": "run_results.json"}
    )
    assert ok and not results["truncated"], results
    statuses = {r["unique_id"]: r["status"] for r in results["content"]["results"]}
    assert statuses["model.dbt_demo.orders"] == "success"
    # Large artifact: a summary and the resource of the whole file.
    ok, manifest = call_tool(
        server, "dbtcloud_fetch_artifact", {"run_id": run["run_id"], "artifact": "manifest.json"}
    )
    assert ok and manifest["truncated"] and manifest["content"] is None
    assert manifest["size_bytes"] > 100_000 and manifest["summary"]["nodes_by_resource_type"]["model"] >= 5
    assert "query" in manifest["summary"]["how_to_narrow"]
    # The part an agent needs, by a JMESPath query on the artifact (issue 27): bounded by the same cap.
    ok, deps = call_tool(
        server,
        "dbtcloud_fetch_artifact",
        {
            "run_id": run["run_id"],
            "artifact": "manifest.json",
            "query": 'nodes."model.dbt_demo.orders".depends_on.nodes',
        },
    )
    assert ok and not deps["truncated"] and "model.dbt_demo.stg_orders" in deps["result"], deps
    ok, everything = call_tool(
        server,
        "dbtcloud_fetch_artifact",
        {"run_id": run["run_id"], "artifact": "manifest.json", "query": "@"},
    )
    assert ok and everything["truncated"] and everything["result"] is None, everything
    assert "100000 bytes" in everything["summary"]["how_to_narrow"]

    async def read_resource() -> str:
        async with Client(server) as client:
            contents = await client.read_resource(manifest["resource_uri"])
        return contents[0].text

    whole = json.loads(asyncio.run(read_resource()))
    assert "model.dbt_demo.orders" in whole["nodes"]

    ok, last = call_tool(server, "dbtcloud_get_last_run", {"job_id": DAILY_JOB})
    assert ok and last["run_id"] == run["run_id"] and last["status"] == "Success" and last["cause"] == cause
    ok, fresh = call_tool(server, "dbtcloud_get_source_freshness", {"job_id": DAILY_JOB})
    assert ok and fresh["run_id"] == run["run_id"], fresh
    by_table = {s["table_name"]: s["status"] for s in fresh["sources"]}
    assert by_table == {"customers": "pass", "orders": "warn", "payments": "error"}

    # The failing job: its explicit freshness step errors (payments is stale) and the build step is skipped.
    ok, bad = call_tool(
        server, "dbtcloud_trigger_job", {"job_id": FRESHNESS_GATE_JOB, "cause": "test failure"}
    )
    assert ok
    polled, _ = asyncio.run(_poll_with_progress(server, bad["run_id"]))
    assert polled["status"] == "error" and "Step 1" in (polled["status_message"] or "")
    assert [s["status"] for s in polled["steps"]] == ["error", "skipped"]
    ok, last = call_tool(server, "dbtcloud_get_last_run", {"job_id": FRESHNESS_GATE_JOB, "status": "Error"})
    assert ok and last["run_id"] == bad["run_id"]
    ok, missing = call_tool(
        server, "dbtcloud_fetch_artifact", {"run_id": bad["run_id"], "artifact": "catalog.json"}
    )
    assert not ok and missing["error"] == "artifact_not_found"
    assert DEMO_TOKEN not in json.dumps([run, polled, results["provenance"], last, fresh, missing])

    # An agent's allowed override run of the same job succeeds and is newer, with every artifact (the job adds its
    # freshness and docs steps): it never stands for the job (issue 23 §1).
    ok, override = call_tool(
        server,
        "dbtcloud_trigger_job",
        {
            "job_id": DAILY_JOB,
            "cause": "Agent: compile one model",
            "steps_override": ["dbt compile -s stg_orders"],
        },
    )
    assert ok and override["steps_override"] == ["dbt compile --select stg_orders"], override
    polled, _ = asyncio.run(_poll_with_progress(server, override["run_id"]))
    assert polled["status"] == "success", polled
    ok, written = call_tool(
        server, "dbtcloud_fetch_artifact", {"run_id": override["run_id"], "artifact": "sources.json"}
    )
    assert ok and written["size_bytes"] > 0  # the override run did write freshness results...
    ok, fresh = call_tool(server, "dbtcloud_get_source_freshness", {"job_id": DAILY_JOB})
    assert ok and fresh["run_id"] == run["run_id"], fresh  # ...but the job's freshness is the canonical run's

    # Dagster snapshots the account; the dbt-artifacts tools then answer from the dbt Cloud run's artifacts.
    assets_answer_from_dbt_cloud(
        emulator,
        monkeypatch,
        success_run=run["run_id"],
        failed_run=bad["run_id"],
        override_run=override["run_id"],
    )


def assets_answer_from_dbt_cloud(
    emulator: Emulator,
    monkeypatch: pytest.MonkeyPatch,
    *,
    success_run: int,
    failed_run: int,
    override_run: int,
) -> None:
    import io

    import dagster as dg

    from ade_platform.definitions import build_definitions
    from ade_platform.ops import materialize
    from mcp_bridge.toolsets.dbt.artifacts import build as build_artifacts

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    settings = emulator.settings(extra="  dbt_tools_job: 7301\n")
    log = io.StringIO()
    assert materialize(settings, "*", out=log) == 0, log.getvalue()[-3000:]
    ctx = BridgeContext.from_settings(settings)

    ok, lineage = call_tool(
        build_artifacts(ctx), "dbt_get_lineage", {"node_id": "model.dbt_demo.orders", "direction": "upstream"}
    )
    assert ok, lineage
    assert "model.dbt_demo.stg_orders" in json.dumps(lineage)
    # The manifest and run results are the canonical run's, not the newer override run's.
    assert lineage["provenance"]["dbt_cloud"]["run_id"] == success_run
    assert lineage["provenance"]["dbt_cloud"]["job_id"] == DAILY_JOB
    # The run's manifest answer names the dbt-artifacts tools that read this very file.
    ok, manifest = call_tool(
        build(ctx),
        "dbtcloud_fetch_artifact",
        {"run_id": success_run, "artifact": "manifest.json", "query": "metadata"},
    )
    assert ok and "dbt_get_lineage" in manifest["dbt_tools"], manifest
    ok, failed_models = call_tool(build_artifacts(ctx), "dbt_get_failed_models", {})
    assert ok and failed_models["provenance"]["dbt_cloud"]["run_id"] == success_run, failed_models[
        "provenance"
    ]

    server = build(ctx)
    ok, last = call_tool(server, "dbtcloud_get_last_run", {"job_id": FRESHNESS_GATE_JOB, "status": "Error"})
    assert ok and last["run_id"] == failed_run and last["provenance"]["source"] == "cache"
    ok, jobs = call_tool(server, "dbtcloud_list_jobs", {"project_id": 7101})
    assert ok and jobs["provenance"]["source"] == "cache" and jobs["count"] == 3
    ok, fresh = call_tool(server, "dbtcloud_get_source_freshness", {"job_id": DAILY_JOB})
    assert ok and fresh["provenance"]["source"] == "cache" and fresh["run_id"] == success_run
    # The run history still shows the override run for what it is.
    ok, last = call_tool(server, "dbtcloud_get_last_run", {"job_id": DAILY_JOB})
    assert ok and last["run_id"] == override_run and last["started_by_agent"] and last["steps_override"]

    # The sensor notices the failed run of a tracked job once.
    defs = build_definitions(settings)
    sensor = defs.resolve_sensor_def("dbt_cloud_failed_run_sensor")
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), cursor=None) as context:
        result = sensor(context)
    assert [r.run_key for r in result.run_requests] == [f"dbt_cloud_failed_run_{failed_run}"]
    with dg.build_sensor_context(instance=dg.DagsterInstance.ephemeral(), cursor=str(failed_run)) as context:
        again = sensor(context)
    assert not getattr(again, "run_requests", None)
