"""The dbt-cloud toolset through MCP against the dbt Cloud emulator: answers, errors, retries, no token leaks.

These tests start the emulator with no run history, so no dbt runs in the background except the one the poll
timeout test triggers; the end-to-end runs (which execute dbt) are in test_dbt_cloud_end_to_end.py (slow).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.emulators.dbt_cloud import CI_JOB, DAILY_JOB, DEMO_TOKEN, PRODUCTION_ENV, PROJECT_ID
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt_cloud import build
from tests.helpers import call_tool, call_tools
from tests.mcp.dbt_cloud_support import Emulator, running_emulator

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulator]:
    with running_emulator(tmp_path_factory.mktemp("dbtcloud"), history=False) as emu:
        yield emu


TRIGGERABLE = "  triggerable_jobs: [7301, 7302, 7303]\n"


@pytest.fixture(scope="module")
def server(emulator: Emulator):
    settings = emulator.settings(extra=TRIGGERABLE)
    server = build(BridgeContext.from_settings(settings))
    server.ade_settings = settings  # for the audit test
    return server


def test_list_jobs_live(server) -> None:
    ok, body = call_tool(server, "dbtcloud_list_jobs", {"project_id": PROJECT_ID})
    assert ok, body
    by_id = {j["job_id"]: j for j in body["jobs"]}
    assert set(by_id) == {7301, 7302, 7303}
    daily = by_id[DAILY_JOB]
    assert daily["steps"] == ["dbt build"] and daily["generate_docs"] and daily["run_source_freshness"]
    assert daily["environment_name"] == "Production" and daily["cron"] == "0 4 * * *" and daily["tracked"]
    assert by_id[CI_JOB]["schedule_enabled"] is False and by_id[CI_JOB]["cron"] is None
    assert body["provenance"]["source"] == "live"
    ok, body = call_tool(
        server, "dbtcloud_list_jobs", {"project_id": PROJECT_ID, "environment_id": PRODUCTION_ENV}
    )
    assert ok and {j["job_id"] for j in body["jobs"]} == {7301, 7303}
    ok, body = call_tool(server, "dbtcloud_list_jobs", {"project_id": 999})
    assert ok and body["jobs"] == []


def test_bad_token_is_auth_failed_without_the_token(emulator: Emulator) -> None:
    wrong = "dbtc_wrong_token_0123456789"
    server = build(BridgeContext.from_settings(emulator.settings(token=wrong, extra=TRIGGERABLE)))
    results = call_tools(
        server,
        [
            ("dbtcloud_list_jobs", {"project_id": PROJECT_ID}),
            ("dbtcloud_get_last_run", {"job_id": CI_JOB}),
            ("dbtcloud_trigger_job", {"job_id": CI_JOB, "cause": "test"}),
        ],
    )
    for ok, body in results:
        assert not ok and body["error"] == "auth_failed", body
        assert wrong not in json.dumps(body)
    server = build(BridgeContext.from_settings(emulator.settings(token="")))
    ok, body = call_tool(server, "dbtcloud_poll_run", {"run_id": 1})
    assert not ok and body["error"] == "auth_failed" and "empty" in body["detail"]


def test_unknown_job_and_run(server) -> None:
    results = call_tools(
        server,
        [
            ("dbtcloud_get_last_run", {"job_id": 999}),
            ("dbtcloud_trigger_job", {"job_id": 999, "cause": "test"}),
            ("dbtcloud_poll_run", {"run_id": 999}),
            ("dbtcloud_fetch_artifact", {"run_id": 999, "artifact": "manifest.json"}),
            ("dbtcloud_get_source_freshness", {"job_id": 999}),
        ],
    )
    codes = [body["error"] for ok, body in results if not ok]
    # a job off the allow-list is refused before dbt Cloud is asked
    assert codes == [
        "job_not_found",
        "trigger_not_allowed",
        "run_not_found",
        "run_not_found",
        "job_not_found",
    ]


def test_no_matching_run_and_no_freshness(server) -> None:
    ok, body = call_tool(server, "dbtcloud_get_last_run", {"job_id": CI_JOB, "status": "Error"})
    assert not ok and body["error"] == "no_matching_run"
    assert body["job_id"] == CI_JOB and body["status_filter"] == "Error"
    ok, body = call_tool(server, "dbtcloud_get_source_freshness", {"job_id": CI_JOB})
    assert not ok and body["error"] == "no_freshness_run"
    ok, body = call_tool(server, "dbtcloud_get_last_run", {"job_id": CI_JOB, "status": "Exploded"})
    assert not ok and body["error"] == "invalid_argument"


def test_rate_limit_is_retried_then_reported(emulator: Emulator, server) -> None:
    before = emulator.counters()
    emulator.rate_limit(2, retry_after=0)
    ok, body = call_tool(server, "dbtcloud_list_jobs", {"project_id": PROJECT_ID})
    assert ok and len(body["jobs"]) == 3
    assert emulator.counters()["throttled"] == before["throttled"] + 2
    emulator.rate_limit(50, retry_after=0)
    try:
        ok, body = call_tool(server, "dbtcloud_list_jobs", {"project_id": PROJECT_ID})
    finally:
        emulator.rate_limit(0)
    assert not ok and body["error"] == "rate_limited"


@pytest.mark.slow
def test_unreachable_api_is_connection_failed(emulator: Emulator) -> None:
    from ade_platform.emulators.demo import free_port

    settings = emulator.settings(base_url=f"http://127.0.0.1:{free_port()}/api/v2")
    ok, body = call_tool(
        build(BridgeContext.from_settings(settings)), "dbtcloud_list_jobs", {"project_id": 1}
    )
    assert not ok and body["error"] == "connection_failed"


def test_bad_steps_override_changes_nothing(emulator: Emulator, server) -> None:
    ok, body = call_tool(
        server, "dbtcloud_trigger_job", {"job_id": CI_JOB, "cause": "test", "steps_override": ["rm -rf /"]}
    )
    assert not ok and body["error"] == "steps_override_refused" and body["token"] == "rm"
    ok, body = call_tool(server, "dbtcloud_get_last_run", {"job_id": CI_JOB, "status": None})
    assert not ok and body["error"] == "no_matching_run"  # nothing was triggered


@pytest.mark.slow
def test_trigger_then_poll_times_out(emulator: Emulator, server, tmp_path: Path) -> None:
    with emulator.runs_held():  # every run slot busy: the run below is still queued when polled
        ok, run = call_tool(
            server,
            "dbtcloud_trigger_job",
            {
                "job_id": CI_JOB,
                "cause": "Agent-triggered: poll timeout test",
                "steps_override": ["dbt compile -s stg_orders"],
            },
        )
        assert ok, run
        assert run["status"] == "queued" and run["job_id"] == CI_JOB
        assert run["steps_override"] == ["dbt compile --select stg_orders"]
        assert run["provenance"]["source"] == "live" and run["href"].endswith(f"/runs/{run['run_id']}/")
        ok, polled = call_tool(server, "dbtcloud_poll_run", {"run_id": run["run_id"], "timeout_seconds": 0})
        assert ok, polled
        assert polled["timed_out"] is True and polled["status"] == "queued", polled
        assert (
            polled["status_checks"] == 1 and polled["steps"][0]["name"] == "dbt compile --select stg_orders"
        )
    ok, last = call_tool(server, "dbtcloud_get_last_run", {"job_id": CI_JOB, "status": None})
    assert ok and last["run_id"] == run["run_id"] and last["cause"] == "Agent-triggered: poll timeout test"
    assert last["triggered_by"] == "api" and last["started_by_agent"] is True


@pytest.mark.slow
def test_token_never_in_audit_tags(server) -> None:
    import dagster as dg

    from ade_platform.live import flush_all

    # The trigger and poll are the timeout test's (slow, like this one); the listing is made here, so the test
    # holds when `-m slow` deselects the listing test.
    assert call_tool(server, "dbtcloud_list_jobs", {"project_id": PROJECT_ID})[0]
    flush_all(60)
    with dg.DagsterInstance.from_config(str(server.ade_settings.dagster_home)) as instance:
        runs = instance.get_runs()
        tools = {run.tags.get("ade/tool") for run in runs}
        assert {"dbtcloud_trigger_job", "dbtcloud_list_jobs", "dbtcloud_poll_run"} <= tools
        for run in runs:
            assert DEMO_TOKEN not in json.dumps(run.tags)
        trigger = next(r for r in runs if r.tags.get("ade/tool") == "dbtcloud_trigger_job" and r.is_success)
        assert trigger.tags["ade/cause"] == "Agent-triggered: poll timeout test"
        assert json.loads(trigger.tags["ade/arguments"]) == {
            "job_id": CI_JOB,
            "steps_override": ["dbt compile --select stg_orders"],
        }


def test_bad_jmespath_is_a_structured_error_before_any_call(emulator: Emulator, server) -> None:
    before = emulator.counters()
    for query in ("nodes.[", "nodes | unknown_function(@)", "x" * 1001):
        ok, body = call_tool(
            server, "dbtcloud_fetch_artifact", {"run_id": 1, "artifact": "manifest.json", "query": query}
        )
        assert not ok and body["error"] in ("invalid_query", "invalid_argument"), body
    ok, body = call_tool(
        server, "dbtcloud_fetch_artifact", {"run_id": 1, "artifact": "manifest.json", "query": "nodes.["}
    )
    assert body["error"] == "invalid_query" and "JMESPath" in body["detail"], body
    assert emulator.counters() == before  # refused before dbt Cloud was asked
