"""What each MCP revision gets from the gateway (docs/MCP_PROTOCOL.md), through FastMCP's client on the current
revision (2026-07-28) and on 2025-11-25: cache hints on list results, and dbtcloud_poll_run as a task (created
at once, its progress in tasks/get, its result there, cancellable with the cancelled wait on record as an audit
run), still a plain call for a client that does not ask for a task. A task lives in its caller's token scope:
another signed-in caller cannot read or cancel it. The TypeScript SDK's client does the same in
tests/clients/test_ts_client.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client

from ade_platform.emulators.dbt_cloud import ACCOUNT_ID, CI_JOB, DEMO_TOKEN
from ade_platform.live import TAG_TOOL, TAG_USER, flush_all
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from mcp_bridge.tasks import LIST_TTL_SECONDS
from tests.auth.support import LocalIssuer, oidc_settings, threaded_gateway
from tests.helpers import tool_payload
from tests.mcp.dbt_cloud_support import Emulator, running_emulator

pytestmark = pytest.mark.integration
CURRENT, PREVIOUS = "2026-07-28", "2025-11-25"


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with running_emulator(tmp_path_factory.mktemp("dbtcloud"), history=False) as emu:
        emu.hold_runs(True)  # a triggered run stays queued: a wait on it lasts until its timeout
        yield emu


@pytest.fixture(scope="module")
def queued_run(emulator: Emulator) -> int:
    """A run of the CI job, queued for as long as the module runs."""
    return emulator.queue_run(CI_JOB, "protocol revisions test")


@pytest.fixture(scope="module")
def gateway(emulator: Emulator) -> Any:
    settings = emulator.settings()
    ctx = BridgeContext.from_settings(settings)
    server = build_server(settings, ctx=ctx)
    server.ade_ctx = ctx
    return server


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


@pytest.mark.parametrize(("mode", "revision"), [("auto", CURRENT), ("legacy", PREVIOUS)])
def test_list_results_carry_cache_hints_on_the_current_revision(
    gateway: Any, mode: str, revision: str
) -> None:
    async def go() -> dict[str, Any]:
        async with Client(gateway, mode=mode) as client:
            assert client.protocol_version == revision
            return {
                "tools": await client.list_tools_mcp(),
                "resources": await client.list_resources_mcp(),
                "templates": await client.list_resource_templates_mcp(),
                "prompts": await client.list_prompts_mcp(),
            }

    listed = _run(go())
    assert listed["tools"].tools and listed["templates"].resource_templates
    for name, result in listed.items():
        wire = result.model_dump(by_alias=True, exclude_unset=True)
        if revision == CURRENT:
            # fixed for the life of the process; private: with oidc each caller is listed what its roles allow
            assert (wire.get("ttlMs"), wire.get("cacheScope")) == (LIST_TTL_SECONDS * 1000, "private"), name
        else:  # 2025-11-25 has no cache hints: the SDK's server leaves them off that wire
            assert "ttlMs" not in wire and "cacheScope" not in wire, (name, wire)


def test_poll_run_is_a_plain_call_for_clients_that_do_not_ask_for_a_task(
    gateway: Any, queued_run: int
) -> None:
    async def go(mode: str) -> tuple[bool, Any]:
        async with Client(gateway, mode=mode) as client:
            return tool_payload(
                await client.call_tool(
                    "dbtcloud_poll_run", {"run_id": queued_run, "timeout_seconds": 0}, raise_on_error=False
                )
            )

    for mode in ("legacy", "auto"):  # FastMCP's client asks for a task only through call_tool_task
        ok, answer = _run(go(mode))
        assert ok, answer
        assert answer["status"] == "queued" and answer["timed_out"] is True and answer["status_checks"] == 1
        assert answer["provenance"]["source"] == "live"


def test_poll_run_as_a_task_reports_progress_and_answers_in_tasks_get(gateway: Any, queued_run: int) -> None:
    from fastmcp_tasks import call_tool_task

    async def go() -> tuple[Any, list[Any], Any]:
        async with Client(gateway) as client:
            task = await call_tool_task(
                client, "dbtcloud_poll_run", {"run_id": queued_run, "timeout_seconds": 2}
            )
            created = task.create_result
            seen = [await task.wait(state="working")]
            while "queued after" not in (seen[-1].status_message or ""):  # the first progress report
                await asyncio.sleep(0.2)
                seen.append(await task.status())
            return created, seen, await task.result()

    created, seen, result = _run(go())
    assert created.status == "working" and len(created.task_id) >= 40  # at once, with an unguessable id
    assert seen[-1].status_message.startswith(f"run {queued_run} queued after")
    answer = result.structured_content
    assert answer["timed_out"] is True and answer["status"] == "queued" and answer["status_checks"] >= 2
    assert answer["provenance"]["source"] == "live"


def test_a_failing_task_answers_the_structured_error(gateway: Any) -> None:
    from fastmcp_tasks import call_tool_task

    async def go() -> Any:
        async with Client(gateway) as client:
            task = await call_tool_task(
                client, "dbtcloud_poll_run", {"run_id": 999, "timeout_seconds": 1}, raise_on_error=False
            )
            return await task.result()

    result = _run(go())
    assert result.is_error
    error = json.loads(result.content[0].text)
    assert error["error"] == "run_not_found" and error["detail"] == "run 999 not found in account 7001"


def test_a_cancelled_task_is_cancelled_and_its_wait_is_on_record(gateway: Any, queued_run: int) -> None:
    from dagster import DagsterRunStatus, RunsFilter
    from fastmcp_tasks import call_tool_task

    ctx = gateway.ade_ctx

    def poll_runs() -> dict[str, Any]:
        flush_all()
        found = ctx.live().instance().get_runs(filters=RunsFilter(tags={TAG_TOOL: "dbtcloud_poll_run"}))
        return {r.run_id: r for r in found}

    before = poll_runs()

    async def go() -> tuple[str, list[Any]]:
        async with Client(gateway) as client:
            task = await call_tool_task(
                client, "dbtcloud_poll_run", {"run_id": queued_run, "timeout_seconds": 600}
            )
            while "queued after" not in ((await task.status()).status_message or ""):
                await asyncio.sleep(0.2)  # the wait is under way
            await task.cancel()
            status = (await task.wait(timeout=60)).status
            # tasks/get says cancelled at once; the wait itself stops (and is recorded) as the worker cancels it
            for _ in range(300):
                runs = await anyio.to_thread.run_sync(poll_runs)
                new = [run for run_id, run in runs.items() if run_id not in before]
                if new:
                    return status, new
                await asyncio.sleep(0.2)
            return status, []

    status, runs = _run(go())
    assert status == "cancelled"
    # the cancelled wait is one audit run, failed, naming its caller (stdio-like in-memory: the local OS user)
    assert len(runs) == 1 and runs[0].status == DagsterRunStatus.FAILURE, runs
    assert runs[0].tags[TAG_USER] and json.loads(runs[0].tags["ade/arguments"])["run_id"] == queued_run


def test_another_caller_cannot_read_or_cancel_a_task_and_a_running_task_holds_its_callers_slot(
    emulator: Emulator, queued_run: int, tmp_path: Path
) -> None:
    from fastmcp_tasks import ToolTask, call_tool_task

    dbt_cloud = emulator.settings().dbt_cloud
    assert dbt_cloud is not None
    with LocalIssuer() as issuer:
        settings = oidc_settings(
            tmp_path,
            issuer.url,
            toolsets="dbt-cloud",
            access="  access:\n    limits:\n      concurrent_live_calls: 1\n",
            sections=(
                "dbt_cloud:\n"
                f"  base_url: {emulator.api}\n  account_id: {ACCOUNT_ID}\n  api_token: {DEMO_TOKEN}\n"
                "  project_id: 7101\n  tracked_jobs: [7301, 7303]\n  poll_interval_seconds: 0.5\n"
            ),
        )
        with threaded_gateway(settings) as url:
            alice = issuer.token("alice", audience=url, scopes="ade:read", client_id="agent")
            bob = issuer.token("bob", audience=url, scopes="ade:read", client_id="agent")

            poll = {"run_id": queued_run, "timeout_seconds": 0}

            async def go() -> tuple[list[str], str, list[Any], Any]:
                async with Client(url, auth=alice) as mine, Client(url, auth=bob) as theirs:
                    task = await call_tool_task(
                        mine, "dbtcloud_poll_run", {"run_id": queued_run, "timeout_seconds": 4}
                    )
                    while "queued after" not in ((await task.status()).status_message or ""):
                        await asyncio.sleep(0.2)  # the task's run is under way
                    stolen = ToolTask(theirs, "dbtcloud_poll_run", task.create_result)
                    refused = []
                    for attempt in (stolen.status, stolen.cancel):
                        try:
                            await attempt()
                        except Exception as exc:  # the SDK's MCPError: the task is not found in bob's scope
                            refused.append(str(exc))
                    # alice's one live slot is her running task's; bob has his own
                    plain = [
                        tool_payload(await client.call_tool("dbtcloud_poll_run", poll, raise_on_error=False))
                        for client in (mine, theirs)
                    ]
                    return refused, (await task.status()).status, plain, await task.result()

            refused, status, plain, result = _run(go())
    assert len(refused) == 2 and all("not found" in r.lower() for r in refused), refused
    assert status == "working"  # bob's cancel did not touch alice's task
    (alice_ok, alice_answer), (bob_ok, bob_answer) = plain
    assert not alice_ok and alice_answer["error"] == "rate_limited", alice_answer
    assert bob_ok and bob_answer["timed_out"] is True, bob_answer
    assert result.structured_content["timed_out"] is True
    flush_all()
    run = (
        BridgeContext.from_settings(settings)
        .live()
        .instance()
        .get_run_by_id(result.structured_content["provenance"]["run_id"])
    )
    assert run is not None and run.tags[TAG_USER] == "alice"  # the task's audit run names its caller
