"""The orchestrator toolset on backend "dagster", through the MCP protocol, against a real Dagster instance
holding runs of a project of our own (tests/orchestrators/dagster_jobs.py)."""

from __future__ import annotations

from typing import Any

import pytest

from ade_platform.live import LiveRunner
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import assert_refused, call_tool, call_tools
from tests.mcp.paging_support import all_pages, items

pytestmark = pytest.mark.integration
D = {"backend": "dagster"}


@pytest.fixture(scope="module")
def dagster_stack(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, str]]:
    import os

    import dagster as dg

    from tests.orchestrators.dagster_jobs import populate

    saved = os.environ.pop("DAGSTER_HOME", None)
    home = tmp_path_factory.mktemp("orch") / "ade"
    settings = settings_for(home)
    (home / "dagster").mkdir(parents=True)
    instance = dg.DagsterInstance.from_config(str(home / "dagster"))
    runs = populate(instance, home)
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(settings.dagster_home)
    server = build_server(settings, only="orchestrator", ctx=ctx)
    server._ade_settings = (
        settings  # the runs-asset test builds the Dagster definitions from the same settings
    )
    yield server, runs
    if saved is not None:
        os.environ["DAGSTER_HOME"] = saved


def test_last_run_by_state_and_history(dagster_stack) -> None:
    server, runs = dagster_stack
    (ok_f, failed), (ok_s, success), (ok_a, latest), (ok_h, history) = call_tools(
        server,
        [
            ("orchestrator_get_last_run", {"dag_id": "nightly_dbt", "status": "failed", **D}),
            ("orchestrator_get_last_run", {"dag_id": "nightly_dbt", **D}),
            ("orchestrator_get_last_run", {"dag_id": "nightly_dbt", "status": "any", **D}),
            ("orchestrator_get_run_history", {"dag_id": "nightly_dbt", "lookback_days": 1, **D}),
        ],
    )
    assert ok_f and failed["run_id"] == runs["failed"] and failed["state"] == "FAILURE"
    assert failed["status"] == "failed" and failed["backend"] == "dagster"
    assert failed["duration_seconds"] is not None and failed["provenance"]["source"] == "live"
    assert ok_s and success["run_id"] == runs["ok"] and success["state"] == "SUCCESS"
    assert ok_a and latest["run_id"] == runs["failed"]  # the newest run, whatever its state
    assert ok_h and history["total_runs"] == 2
    assert (history["success_count"], history["failure_count"]) == (1, 1)
    assert [r["run_id"] for r in history["runs"]] == [runs["failed"], runs["ok"]]
    assert history["avg_duration_seconds"] > 0


def test_run_history_pages_and_filters_by_state_and_window(dagster_stack) -> None:
    """docs/PAGING.md on a live backend: one run a page, each once; state and since/until narrow `runs` and
    `total` (the window's counts stay whole); a cursor of another filter is refused."""
    server, runs = dagster_stack
    base = {"dag_id": "nightly_dbt", "lookback_days": 1, **D}
    pages = all_pages(server, "orchestrator_get_run_history", base, "runs", limit=1)
    assert [r["run_id"] for r in items(pages, "runs")] == [runs["failed"], runs["ok"]]
    assert len(pages) == 2 and pages[0]["total"] == 2 and pages[0]["truncated"]
    (ok_f, failed), (ok_w, future), (ok_u, before), (ok_c, refused) = call_tools(
        server,
        [
            ("orchestrator_get_run_history", {**base, "state": "failure"}),
            ("orchestrator_get_run_history", {**base, "since": "2999-01-01"}),
            ("orchestrator_get_run_history", {**base, "until": "2000-01-01T00:00:00Z"}),
            ("orchestrator_get_run_history", {**base, "state": "failure", "cursor": pages[0]["next_cursor"]}),
        ],
    )
    assert ok_f and [r["run_id"] for r in failed["runs"]] == [runs["failed"]] and failed["total"] == 1, failed
    assert failed["total_runs"] == 2 and failed["failure_count"] == 1  # the window's counts, unfiltered
    assert ok_w and future["runs"] == [] and future["total"] == 0, future
    assert ok_u and before["runs"] == [], before
    assert not ok_c and refused["error"] == "invalid_cursor", refused


def test_failed_task_log_and_signature(dagster_stack) -> None:
    server, runs = dagster_stack
    base = {"dag_id": "nightly_dbt", "run_id": runs["failed"], "task_id": "dbt_build", **D}
    (ok_t, task), (ok_l, logs) = call_tools(
        server, [("orchestrator_get_task_status", base), ("orchestrator_fetch_logs", base)]
    )
    assert ok_t and task["state"] == "FAILURE" and task["status"] == "failed" and task["try_number"] == 1
    assert ok_l and not logs["truncated"] and logs["log_length_chars"] == len(logs["log_text"])
    assert "Database Error in model stg_orders" in logs["log_text"]
    assert "fulfillment_status" in logs["log_text"]
    assert "s3cr3t-hunter2-value" not in logs["log_text"] and "password=***" in logs["log_text"]
    ok, found = call_tool(server, "orchestrator_detect_patterns", {"log_text": logs["log_text"]})
    assert ok and found["builtin_signatures"]
    assert found["matched_signatures"][:2] == ["dbt_missing_column", "dbt_database_error"]
    ok, found = call_tool(
        server,
        "orchestrator_detect_patterns",
        {
            "log_text": logs["log_text"],
            "patterns": [r"Database Error in model (\w+)", "no such thing", "a(b"],
        },
    )
    assert ok and [r["pattern"] for r in found["results"]] == [r"Database Error in model (\w+)", "a(b"]
    first = found["results"][0]["matches"][0]
    assert first["capture_groups"] == ["stg_orders"] and "Database Error" in first["line_snippet"]
    assert found["results"][1]["error"] == "invalid_regex"


def test_retried_step_reports_its_attempts(dagster_stack) -> None:
    server, runs = dagster_stack
    ok, task = call_tool(
        server,
        "orchestrator_get_task_status",
        {"dag_id": "flaky_load", "run_id": runs["retried"], "task_id": "load_raw", **D},
    )
    assert ok and task["state"] == "SUCCESS" and task["try_number"] == 2


ERRORS = [
    ("orchestrator_get_last_run", {"dag_id": "no_such_job"}, "dag_not_found"),
    ("orchestrator_get_task_status", {"dag_id": "nightly_dbt", "run_id": "nope", "task_id": "x"}, "run_not_found"),
    ("orchestrator_fetch_logs", {"dag_id": "flaky_load", "run_id": "@ok", "task_id": "x"}, "run_not_found"),
    ("orchestrator_get_task_status", {"dag_id": "nightly_dbt", "run_id": "@ok", "task_id": "nope"}, "task_not_found"),
    ("orchestrator_get_last_run", {"dag_id": "flaky_load", "status": "failed"}, "no_matching_run"),
    ("orchestrator_get_last_run", {"dag_id": "flaky_load", "status": "bogus"}, "invalid_argument"),
    ("orchestrator_get_last_run", {"dag_id": "x", "backend": "airflow"}, "backend_not_configured"),
    ("orchestrator_trigger_dag", {"dag_id": "x", "backend": "prefect"}, "backend_not_configured"),
]  # fmt: skip


def test_errors(dagster_stack) -> None:
    server, runs = dagster_stack
    errors = assert_refused(server, ERRORS, base=D, placeholders={"@ok": runs["ok"]})
    for error, (_, _, code) in zip(errors, ERRORS, strict=True):
        assert "Traceback" not in error["detail"]
        if code == "run_not_found":
            assert "orchestrator_get_last_run" in error["hint"]


def test_runs_asset_sensor_and_cached_history(dagster_stack) -> None:
    import dagster as dg

    from ade_platform.defs import orchestrators
    from ade_platform.defs.inputs import DomainInputs
    from ade_platform.defs.resources import StoreResource

    server, runs = dagster_stack
    settings = server._ade_settings
    store = StoreResource.from_settings(settings)
    defs = dg.Definitions.merge(
        orchestrators.defs(settings, DomainInputs()), dg.Definitions(resources={"store": store})
    )
    instance = dg.DagsterInstance.from_config(str(settings.dagster_home))
    sensor = defs.resolve_sensor_def("orchestrator_failures_dagster")
    result = sensor(dg.build_sensor_context(instance=instance, cursor=None))
    observed = {
        e.metadata["run_id"].value: e.metadata["failure_signature"].value for e in result.asset_events
    }
    assert observed[runs["failed"]] == "dbt_missing_column"  # (live__ audit runs that failed are noticed too)
    assert len(result.run_requests) == 1 and result.cursor
    again = sensor(dg.build_sensor_context(instance=instance, cursor=result.cursor))
    assert not again.run_requests and not again.asset_events  # the same failure is noticed once

    assert dg.materialize(list(defs.assets), resources={"store": store}, instance=instance).success
    data = store.reader().latest("orchestrator_runs_dagster").data
    nightly = next(d for d in data["dags"] if d["dag_id"] == "nightly_dbt")
    failed = next(r for r in nightly["runs"] if r["run_id"] == runs["failed"])
    assert failed["failed_tasks"] == ["dbt_build"] and failed["failure_signature"] == "dbt_missing_column"
    assert nightly["tracked"] and nightly["tasks"] == [
        {"task_id": "dbt_build", "operator": "op", "dbt_command": None}
    ]

    ok, history = call_tool(server, "orchestrator_get_run_history", {"dag_id": "nightly_dbt", **D})
    assert ok and history["provenance"]["source"] == "cache" and history["total_runs"] == 2, history
    # The materialization run itself is newer than the snapshot of its own job, not of nightly_dbt: current.
    assert history["provenance"]["stale"] is False
    nightly_dbt_rerun(instance)
    ok, history = call_tool(server, "orchestrator_get_run_history", {"dag_id": "nightly_dbt", **D})
    assert ok and history["provenance"]["stale"] and "newer run" in history["provenance"]["stale_reason"]


def nightly_dbt_rerun(instance) -> None:
    from tests.orchestrators.dagster_jobs import QUIET, nightly_dbt

    nightly_dbt.execute_in_process(
        instance=instance, run_config={**QUIET, "ops": {"dbt_build": {"config": {"fail": False}}}}
    )
