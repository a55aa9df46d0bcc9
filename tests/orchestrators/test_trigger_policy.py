"""orchestrator_trigger_dag is not a way to run code (issue 23 §1), through MCP against a real Dagster instance.

- Only allow-listed DAGs: the platform's internal Dagster jobs never, Airflow DAGs and Prefect deployments off the
  list refused before any request (their servers here are closed ports: a request would be connection_failed).
- conf is bounded plain JSON and matches the DAG's schema, or conf_refused, and nothing runs.
- A Dagster job an agent triggers is submitted to the instance (QUEUED, from the platform's code location) and
  launched by the daemon in a process of its own, never executed in the gateway.

A minimal configuration (no dbt, no warehouse) keeps the platform's definitions cheap to load: `refresh_metadata`
materializes the Dagster run-history asset and the cross-stack lineage.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import load_settings
from ade_platform.instance import ensure_dagster_home
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.helpers import call_tool, call_tools

pytestmark = pytest.mark.integration
CLOSED = "http://127.0.0.1:9"  # nothing listens: any request would fail with connection_failed
CONFIG = f"""home: .
mcp:
  toolsets: [orchestrator]
orchestrators:
  max_conf_depth: 3
  dagster:
    triggerable: [refresh_metadata, __ASSET_JOB, live__orchestrator_trigger_dag]
    conf_schemas:
      refresh_metadata:
        type: object
        properties: {{reason: {{type: string}}, limit: {{type: integer, maximum: 10}}}}
        additionalProperties: false
  airflow: {{base_url: "{CLOSED}", dags: [dbt_nightly]}}
  prefect: {{api_url: "{CLOSED}/api", flows: [hello]}}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Any:
    saved = os.environ.pop("DAGSTER_HOME", None)
    root = tmp_path_factory.mktemp("trigger-policy")
    (root / "ade.yaml").write_text(CONFIG)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ADE_")}
    settings = load_settings(root / "ade.yaml", env={**env, "ADE_HOME": str(root / "home")})
    ensure_dagster_home(settings)
    ctx = BridgeContext.from_settings(settings)
    yield build_server(settings, only="orchestrator", ctx=ctx), ctx, settings
    if saved is not None:
        os.environ["DAGSTER_HOME"] = saved


def _runs(ctx: BridgeContext) -> list[Any]:
    from ade_platform.live import flush_all

    flush_all(60)
    return ctx.live().instance().get_runs()


REFUSED = [
    ({"dag_id": "__ASSET_JOB", "backend": "dagster"}, "trigger_not_allowed"),
    ({"dag_id": "live__orchestrator_trigger_dag", "backend": "dagster"}, "trigger_not_allowed"),
    ({"dag_id": "build_everything", "backend": "dagster"}, "trigger_not_allowed"),
    ({"dag_id": "drop_the_warehouse", "backend": "airflow"}, "trigger_not_allowed"),
    ({"dag_id": "nightly", "backend": "prefect"}, "trigger_not_allowed"),
    ({"dag_id": "nightly/prod", "backend": "prefect"}, "trigger_not_allowed"),
    ({"dag_id": "dbt_nightly", "backend": "airflow", "conf": {"a": {"b": {"c": {"d": 1}}}}}, "conf_refused"),
    ({"dag_id": "dbt_nightly", "backend": "airflow", "conf": {f"k{i}": i for i in range(201)}}, "conf_refused"),
    ({"dag_id": "hello/x", "backend": "prefect", "conf": {"blob": "x" * 20_000}}, "conf_refused"),
    ({"dag_id": "refresh_metadata", "backend": "dagster", "conf": {"password": "hunter2-secret"}}, "conf_refused"),
    ({"dag_id": "refresh_metadata", "backend": "dagster", "conf": {"limit": 11}}, "conf_refused"),
]  # fmt: skip


def test_refused_before_any_request_or_run(stack) -> None:
    server, ctx, _ = stack
    before = len(_runs(ctx))
    results = call_tools(server, [("orchestrator_trigger_dag", args) for args, _ in REFUSED])
    for (ok, error), (args, code) in zip(results, REFUSED, strict=True):
        assert not ok and error["error"] == code, (args, error)
        assert "hunter2-secret" not in error["detail"]
    assert "orchestrators.dagster.triggerable" in results[0][1]["hint"]
    assert "rule 'additionalProperties'" in results[-2][1]["detail"]
    assert len(_runs(ctx)) == before  # not a run, not even an audit run


def test_a_dagster_trigger_is_submitted_to_the_instance_not_run_here(stack) -> None:
    server, ctx, _ = stack
    conf = {"reason": "agent: refresh the run history", "limit": 3}
    ok, started = call_tool(
        server, "orchestrator_trigger_dag", {"dag_id": "refresh_metadata", "backend": "dagster", "conf": conf}
    )
    assert ok, started
    assert started["state"] == "QUEUED" and started["backend"] == "dagster"
    instance = ctx.live().instance()
    run = instance.get_run_by_id(started["run_id"])
    assert run.status.value == "QUEUED"  # waiting for the daemon: nothing of the job ran in this process
    assert run.remote_job_origin is not None  # created from the code location, as the UI's Launch button does
    assert run.remote_job_origin.location_name == "ade_platform.definitions"
    assert run.tags["ade/tool"] == "orchestrator_trigger_dag" and run.tags["ade/dag_id"] == "refresh_metadata"
    assert not [
        e for e in instance.all_logs(run.run_id) if e.is_dagster_event and e.dagster_event.is_step_event
    ]
    audit = [r for r in _runs(ctx) if r.job_name == "live__orchestrator_trigger_dag"]
    assert len(audit) == 1 and audit[0].is_success and audit[0].tags["ade/cause"] == conf["reason"]


def test_an_unknown_platform_job_is_dag_not_found(stack) -> None:
    _, _, settings = stack
    dagster = settings.orchestrators.dagster.model_copy(update={"triggerable": ["nope"]})
    listed = settings.model_copy(
        update={"orchestrators": settings.orchestrators.model_copy(update={"dagster": dagster})}
    )
    server = build_server(listed, only="orchestrator", ctx=BridgeContext.from_settings(listed))
    ok, error = call_tool(server, "orchestrator_trigger_dag", {"dag_id": "nope", "backend": "dagster"})
    assert not ok and error["error"] == "dag_not_found", error
    assert str(settings.home) not in error["detail"]


@pytest.mark.slow
def test_the_daemon_launches_the_run_in_its_own_process(stack) -> None:
    server, ctx, settings = stack
    ok, started = call_tool(
        server, "orchestrator_trigger_dag", {"dag_id": "refresh_metadata", "backend": "dagster", "conf": {}}
    )
    assert ok, started
    env = {
        **os.environ,
        "ADE_HOME": str(settings.home),
        "ADE_CONFIG": str(settings.config_path),
        "DAGSTER_HOME": str(settings.dagster_home),
    }
    log = (settings.home / "daemon.log").open("w")
    daemon = subprocess.Popen(
        [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-m", "ade_platform.definitions"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    instance = ctx.live().instance()
    try:
        deadline = time.monotonic() + 600
        while instance.get_run_by_id(started["run_id"]).status.value not in ("SUCCESS", "FAILURE"):
            assert daemon.poll() is None, (settings.home / "daemon.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "the daemon did not finish the run in time"
            time.sleep(2)
    finally:
        if daemon.poll() is None:
            os.killpg(daemon.pid, signal.SIGTERM)
            daemon.wait(60)
        log.close()
    # The run ran (its Airflow and Prefect steps fail here: their servers are closed ports), in another process.
    events = [e for e in instance.all_logs(started["run_id"]) if e.is_dagster_event]
    succeeded = {e.step_key for e in events if e.dagster_event.event_type_value == "STEP_SUCCESS"}
    assert "orchestrator_runs_dagster" in succeeded, [e.dagster_event.message for e in events][-10:]
    pids = {e.dagster_event.pid for e in events if e.dagster_event.pid is not None}
    assert pids and os.getpid() not in pids
