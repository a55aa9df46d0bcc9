"""The orchestrator toolset against a real Prefect 3 server, with flow runs of our own
(tests/orchestrators/prefect_flows.py): failed and successful runs, a retried task, a deployment to trigger."""

from __future__ import annotations

from typing import Any

import pytest

from ade_platform.clients.orchestrators import OrchestratorError
from ade_platform.clients.orchestrators.prefect import PrefectClient
from ade_platform.config import OrchestratorSettings, PrefectSettings
from ade_platform.live import LiveRunner
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import assert_refused, call_tool, call_tools

# The session's Prefect fixture sends a 60,000-line log through the API first: minutes on a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(1800)]
P = {"backend": "prefect"}


def on_prefect(server: Any, tool: str, **arguments: Any) -> tuple[bool, Any]:
    """One tool call with the Prefect backend chosen."""
    return call_tool(server, tool, {**arguments, **P})


def task_run(flow: str, run_id: str, task: str) -> dict[str, str]:
    """The arguments that name one task run: its flow, the flow run, the task."""
    return {"dag_id": flow, "run_id": run_id, "task_id": task}


@pytest.fixture(scope="module")
def prefect_stack(prefect_server: dict[str, str], tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("orch-prefect") / "ade"
    orchestrators = OrchestratorSettings(
        prefect=PrefectSettings(
            api_url=prefect_server["url"], flows=["hello"], triggerable=["hello", "nightly_dbt"]
        )
    )
    settings = settings_for(home).model_copy(update={"orchestrators": orchestrators})
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(home / "dagster")  # its own instance, whatever DAGSTER_HOME another test left
    return build_server(settings, only="orchestrator", ctx=ctx), ctx, prefect_server


def test_failed_flow_run_task_log_and_signature(prefect_stack) -> None:
    server, _, ids = prefect_stack
    ok, last = on_prefect(server, "orchestrator_get_last_run", dag_id="nightly_dbt", status="FAILED")
    assert ok and last["run_id"] == ids["failed_run"] and last["state"] == "FAILED", last
    base = {**task_run("nightly_dbt", last["run_id"], "dbt_build"), **P}
    (ok_t, task), (ok_l, logs) = call_tools(
        server, [("orchestrator_get_task_status", base), ("orchestrator_fetch_logs", base)]
    )
    assert ok_t and task["state"] == "FAILED" and task["try_number"] == 1 and task["max_tries"] == 1, task
    assert task["task_id"] == "dbt_build"  # the request's, not the task run's name (dbt_build-<suffix>)
    assert ok_l and "Database Error in model stg_orders" in logs["log_text"], logs
    ok, found = call_tool(server, "orchestrator_detect_patterns", {"log_text": logs["log_text"]})
    assert ok and found["matched_signatures"][:2] == ["dbt_missing_column", "dbt_database_error"]


def test_a_long_log_ends_with_its_error(prefect_stack) -> None:
    # 60,000 lines, three times what one read takes: the newest are read, so the error at the end is there.
    server, _, ids = prefect_stack
    ok, logs = on_prefect(
        server, "orchestrator_fetch_logs", **task_run("long_log", ids["long_log_run"], "load_everything")
    )
    assert ok and logs["truncated"], logs.get("log_length_chars")
    # the end: the task's own last lines, then Prefect's record of its failure, with the error
    last = logs["log_text"].rstrip("\n").splitlines()[-1]
    assert "Finished in state Failed" in last and "disk quota exceeded" in last, last
    assert "FATAL the load of fct_orders failed: disk quota exceeded" in logs["log_text"]
    assert "loaded batch 59998 of 60000" in logs["log_text"]


def test_a_cancelled_filter_never_returns_a_paused_run(prefect_stack) -> None:
    server, _, ids = prefect_stack
    ok, last = on_prefect(server, "orchestrator_get_last_run", dag_id="gated/manual", status="cancelled")
    assert ok and last["run_id"] == ids["cancelled_run"] and last["state"] == "CANCELLED", last
    ok, paused = on_prefect(server, "orchestrator_get_last_run", dag_id="gated/manual", status="paused")
    assert ok and paused["run_id"] == ids["paused_run"], paused
    # no_matching_run names what was asked, as dbt Cloud's does
    ok, none = on_prefect(server, "orchestrator_get_last_run", dag_id="gated/manual", status="success")
    assert not ok and none["error"] == "no_matching_run", none
    assert none["dag_id"] == "gated/manual" and none["status_filter"] == "success", none


def test_retried_task_run(prefect_stack) -> None:
    server, _, ids = prefect_stack
    ok, task = on_prefect(
        server, "orchestrator_get_task_status", **task_run("flaky_extract", ids["retried_run"], "extract")
    )
    assert ok and task["state"] == "COMPLETED" and task["try_number"] == 2 and task["max_tries"] == 3, task


def test_history_and_trigger_from_the_deployment(prefect_stack) -> None:
    server, ctx, _ = prefect_stack
    ok, history = on_prefect(server, "orchestrator_get_run_history", dag_id="hello")
    assert ok and history["total_runs"] == 1 and history["success_count"] == 1, history
    conf = {"name": "agent", "reason": "agent: check the deployment"}
    ok, started = on_prefect(server, "orchestrator_trigger_dag", dag_id="hello/on-demand", conf=conf)
    assert ok and started["state"] == "SCHEDULED", started
    ok, latest = on_prefect(server, "orchestrator_get_last_run", dag_id="hello/on-demand", status="any")
    assert ok and latest["run_id"] == started["run_id"] and latest["run_type"] == "deployment"
    audit = [r for r in ctx.live().instance().get_runs() if r.job_name == "live__orchestrator_trigger_dag"]
    assert len(audit) == 1 and audit[0].tags["ade/cause"] == conf["reason"]


ERRORS = [
    ("orchestrator_get_last_run", {"dag_id": "no_such_flow"}, "dag_not_found"),
    ("orchestrator_get_last_run", {"dag_id": "hello/no-such-deployment"}, "dag_not_found"),
    ("orchestrator_get_task_status", {"dag_id": "hello", "run_id": "nope", "task_id": "x"}, "run_not_found"),
    ("orchestrator_fetch_logs", {"dag_id": "nightly_dbt", "run_id": "@failed", "task_id": "nope"}, "task_not_found"),
    ("orchestrator_trigger_dag", {"dag_id": "nightly_dbt"}, "dag_not_found"),  # listed; a flow with no deployment
    ("orchestrator_trigger_dag", {"dag_id": "flaky_extract"}, "trigger_not_allowed"),
]  # fmt: skip


def test_errors(prefect_stack) -> None:
    server, _, ids = prefect_stack
    assert_refused(server, ERRORS, base=P, placeholders={"@failed": ids["failed_run"]})
    with pytest.raises(OrchestratorError) as closed:
        PrefectClient("http://127.0.0.1:9/api").list_dags()
    assert closed.value.code == "connection_failed"


def test_list_deployments(prefect_stack) -> None:
    _, _, ids = prefect_stack
    dags = PrefectClient(ids["url"]).list_dags()
    assert [d["dag_id"] for d in dags] == ["gated/manual", "hello/on-demand"]
