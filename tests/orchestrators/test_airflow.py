"""The orchestrator toolset against a real Airflow 3 server (`airflow standalone`) running our DAGs
(tests/orchestrators/airflow_dags): the failed run, its failed task, its log, the signature, a retry, a trigger."""

from __future__ import annotations

import time

import pytest
from pydantic import SecretStr

from ade_platform.clients.orchestrators import OrchestratorError
from ade_platform.clients.orchestrators.airflow import AirflowClient
from ade_platform.config import AirflowSettings, OrchestratorSettings
from ade_platform.emulators.demo import free_port
from ade_platform.live import LiveRunner
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import assert_refused, call_tool, call_tools

pytestmark = [pytest.mark.slow, pytest.mark.integration]
A = {"backend": "airflow"}
DAGS = ("dbt_nightly", "flaky_extract", "hello_success", "dbt_docs")


def _finish(client: AirflowClient, runs: dict[str, str], timeout: float = 420) -> None:
    deadline = time.monotonic() + timeout
    pending = dict(runs)
    while pending and time.monotonic() < deadline:
        for dag_id, run_id in list(pending.items()):
            if client.get_run(dag_id, run_id)["status"] in ("success", "failed"):
                pending.pop(dag_id)
        time.sleep(2)
    assert not pending, f"runs still unfinished: {pending}"


@pytest.fixture(scope="module")
def airflow_stack(airflow_server: dict[str, str], tmp_path_factory: pytest.TempPathFactory):
    client = AirflowClient(airflow_server["url"], airflow_server["username"], airflow_server["password"])
    assert client.version == "v2"
    deadline = time.monotonic() + 180  # the DAG processor parses our folder within moments of start
    while {d["dag_id"] for d in client.list_dags()} < set(DAGS) and time.monotonic() < deadline:
        time.sleep(2)
    runs = {dag_id: client.trigger(dag_id, {"reason": "test"})["run_id"] for dag_id in DAGS}
    _finish(client, runs)
    home = tmp_path_factory.mktemp("orch-airflow") / "ade"
    orchestrators = OrchestratorSettings(
        airflow=AirflowSettings(
            base_url=airflow_server["url"],
            username=airflow_server["username"],
            password=SecretStr(airflow_server["password"]),
            dags=["dbt_nightly", "hello_success"],
            triggerable=["hello_success", "no_such_dag"],  # listed but absent: Airflow answers dag_not_found
        )
    )
    settings = settings_for(home).model_copy(update={"orchestrators": orchestrators})
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(home / "dagster")  # its own instance, whatever DAGSTER_HOME another test left
    return build_server(settings, only="orchestrator", ctx=ctx), ctx, client, runs, settings


def test_failed_run_task_log_and_signature(airflow_stack) -> None:
    server, _, _, runs, _ = airflow_stack
    ok, last = call_tool(
        server, "orchestrator_get_last_run", {"dag_id": "dbt_nightly", "status": "failed", **A}
    )
    assert ok and last["run_id"] == runs["dbt_nightly"] and last["state"] == "failed", last
    assert (
        last["run_type"] == "manual" and last["external_trigger"] and last["provenance"]["source"] == "live"
    )
    base = {"dag_id": "dbt_nightly", "run_id": last["run_id"], "task_id": "dbt_build", **A}
    (ok_t, task), (ok_l, logs) = call_tools(
        server, [("orchestrator_get_task_status", base), ("orchestrator_fetch_logs", base)]
    )
    assert ok_t and task["state"] == "failed" and task["try_number"] == 1 and task["max_tries"] == 1
    assert task["pool"] == "default_pool" and task["operator"] == "BashOperator"
    assert ok_l and "Database Error in model stg_orders" in logs["log_text"] and not logs["truncated"]
    ok, found = call_tool(server, "orchestrator_detect_patterns", {"log_text": logs["log_text"]})
    assert ok and found["matched_signatures"][:2] == ["dbt_missing_column", "dbt_database_error"], found
    ok, none = call_tool(server, "orchestrator_get_last_run", {"dag_id": "dbt_nightly", **A})
    assert not ok and none["error"] == "no_matching_run"


def test_retried_task_and_its_tries(airflow_stack) -> None:
    server, _, _, runs, _ = airflow_stack
    base = {"dag_id": "flaky_extract", "run_id": runs["flaky_extract"], "task_id": "extract", **A}
    (ok_t, task), (ok_l, logs) = call_tools(
        server, [("orchestrator_get_task_status", base), ("orchestrator_fetch_logs", base)]
    )
    assert ok_t and task["state"] == "success" and task["try_number"] == 2 and task["max_tries"] == 3, (
        task
    )  # first try + 2 retries
    assert ok_l and "--- try 1 of 2 ---" in logs["log_text"] and "connection refused" in logs["log_text"]


def test_history_trigger_and_audit(airflow_stack) -> None:
    server, ctx, _, runs, _ = airflow_stack
    ok, history = call_tool(server, "orchestrator_get_run_history", {"dag_id": "hello_success", **A})
    assert ok and history["total_runs"] == 1 and history["success_count"] == 1, history
    assert history["runs"][0]["run_id"] == runs["hello_success"]
    conf = {"reason": "agent: rerun after fix", "password": "p4ss-word-xyz"}
    ok, started = call_tool(
        server, "orchestrator_trigger_dag", {"dag_id": "hello_success", "conf": conf, **A}
    )
    assert ok and started["state"] == "queued" and started["run_id"].startswith("manual__"), started
    ok, latest = call_tool(
        server, "orchestrator_get_last_run", {"dag_id": "hello_success", "status": "any", **A}
    )
    assert ok and latest["run_id"] == started["run_id"]
    audit = [r for r in ctx.live().instance().get_runs() if r.job_name == "live__orchestrator_trigger_dag"]
    assert len(audit) == 1 and audit[0].tags["ade/cause"] == conf["reason"]
    assert (
        "p4ss-word-xyz" not in str(audit[0].tags)
        and '"dag_id": "hello_success"' in audit[0].tags["ade/arguments"]
    )


def test_dbt_command_from_the_bash_operator(airflow_stack) -> None:
    _, _, client, _, _ = airflow_stack
    tasks = client.dag_tasks("dbt_docs")
    assert tasks == [{"task_id": "dbt_version", "operator": "BashOperator", "dbt_command": "dbt --version"}]


ERRORS = [
    ("orchestrator_get_last_run", {"dag_id": "no_such_dag"}, "dag_not_found"),
    ("orchestrator_get_task_status", {"dag_id": "dbt_nightly", "run_id": "nope", "task_id": "x"}, "run_not_found"),
    ("orchestrator_fetch_logs", {"dag_id": "dbt_nightly", "run_id": "@run", "task_id": "nope"}, "task_not_found"),
    ("orchestrator_trigger_dag", {"dag_id": "no_such_dag"}, "dag_not_found"),
    ("orchestrator_trigger_dag", {"dag_id": "dbt_nightly"}, "trigger_not_allowed"),  # tracked, not triggerable
]  # fmt: skip


def test_errors(airflow_stack, airflow_server: dict[str, str]) -> None:
    server, _, _, runs, _ = airflow_stack
    assert_refused(server, ERRORS, base=A, placeholders={"@run": runs["dbt_nightly"]})
    with pytest.raises(OrchestratorError) as bad_password:
        AirflowClient(airflow_server["url"], "ade", "wrong").list_dags()
    assert bad_password.value.code == "auth_failed"
    with pytest.raises(OrchestratorError) as closed:
        AirflowClient(f"http://127.0.0.1:{free_port()}", "ade", "x").list_dags()
    assert closed.value.code == "connection_failed"


def test_password_never_in_answers(airflow_stack, airflow_server: dict[str, str]) -> None:
    server, _, _, runs, _ = airflow_stack
    ok, logs = call_tool(
        server,
        "orchestrator_fetch_logs",
        {"dag_id": "hello_success", "run_id": runs["hello_success"], "task_id": "say_hello", **A},
    )
    assert ok and "hello from airflow" in logs["log_text"]
    assert airflow_server["password"] not in str(logs)
