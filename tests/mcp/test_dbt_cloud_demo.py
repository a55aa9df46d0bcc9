"""The demo's dbt-cloud toolset, as a newcomer sees it after `make demo`: ade.yaml points it at the emulator and
Dagster has snapshotted the account's jobs and runs."""

from __future__ import annotations

import pytest

from ade_platform.config import Settings
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt_cloud import build
from tests.helpers import call_tool

pytestmark = pytest.mark.integration


def test_demo_jobs_answer_from_the_snapshot(demo_settings: Settings) -> None:
    assert demo_settings.dbt_cloud is not None and demo_settings.dbt_cloud.tracked_jobs == [7301, 7303]
    server = build(BridgeContext.from_settings(demo_settings))
    ok, jobs = call_tool(server, "dbtcloud_list_jobs", {"project_id": 7101})
    assert ok, jobs
    assert jobs["provenance"]["source"] == "cache" and jobs["provenance"]["asset"] == "dbt_cloud_jobs"
    assert {j["job_id"]: j["tracked"] for j in jobs["jobs"]} == {7301: True, 7302: False, 7303: True}
    ok, untracked = call_tool(server, "dbtcloud_get_last_run", {"job_id": 7302, "status": None})
    assert not ok and untracked["error"] == "no_matching_run"  # live: the CI job has never run
