"""Out of the box: the orchestrator tools answer for backend "dagster" on the materialized demo, and an agent's
trigger starts one of the demo's jobs, which then appears in the run history with its audit tags."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ade_platform.config import Settings
from ade_platform.live import LiveRunner
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import call_tool

pytestmark = pytest.mark.integration


def test_demo_runs_and_trigger(demo_settings: Settings, tmp_path: Path) -> None:
    demo = build_server(demo_settings, only="orchestrator")
    ok, last = call_tool(demo, "orchestrator_get_last_run", {"dag_id": "__ASSET_JOB", "backend": "dagster"})
    assert ok and last["state"] == "SUCCESS" and last["run_type"] == "manual", last

    # Trigger on a copy of the demo, so the shared demo's store and instance stay as the other tests expect.
    shutil.copytree(demo_settings.home, tmp_path / "ade", ignore=shutil.ignore_patterns("*.lock", "*.wal"))
    settings = settings_for(tmp_path / "ade")
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(settings.dagster_home)
    server = build_server(settings, only="orchestrator", ctx=ctx)
    conf = {"reason": "agent: refresh after a schema change", "api_token": "tok-123456"}
    ok, started = call_tool(
        server, "orchestrator_trigger_dag", {"dag_id": "refresh_metadata", "backend": "dagster", "conf": conf}
    )
    assert ok and started["state"] == "QUEUED" and started["conf"] == conf, started
    from ade_platform.jobs import wait_for_triggered

    wait_for_triggered(600)
    ok, run = call_tool(
        server,
        "orchestrator_get_last_run",
        {"dag_id": "refresh_metadata", "backend": "dagster", "status": "any"},
    )
    assert ok and run["run_id"] == started["run_id"] and run["status"] in ("success", "failed"), run
    tags = ctx.live().instance().get_run_by_id(started["run_id"]).tags
    assert tags["ade/tool"] == "orchestrator_trigger_dag" and tags["ade/dag_id"] == "refresh_metadata"
    assert '"api_token": "***"' in tags["ade/conf"] and "tok-123456" not in str(tags)
    audit = [r for r in ctx.live().instance().get_runs() if r.job_name == "live__orchestrator_trigger_dag"]
    assert len(audit) == 1 and audit[0].tags["ade/cause"] == conf["reason"]
    ok, error = call_tool(server, "orchestrator_trigger_dag", {"dag_id": "no_such_job", "backend": "dagster"})
    assert not ok and error["error"] == "dag_not_found" and "refresh_metadata" in error["detail"]
