"""A failed job's own error is evidence, through MCP: the dbt Cloud emulator really runs dbt on a generated
project (the shop, not the demo); a model edit makes the job's `dbt build` fail, and lineage_explain_incident from
the failed job reads the failing step's log live, parses dbt's error in it and names the model it failed on, with
the column, above the job's own failure.

Before this, the explain from a failed job said "no failing, stale or changed hop upstream" with no error while the
job's log showed dbt's. (Airflow and Prefect read their task logs the same way through their clients; their
servers are not started here.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from ade_platform.config import Settings
from ade_platform.emulators.dbt_cloud import DAILY_JOB
from mcp_bridge.server import build_server
from tests.helpers import call_tool, environment
from tests.mcp.dbt_cloud_support import running_emulator
from tests.mcp.shop_project import materialized_shop

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]

DBT_CLOUD = """dbt_cloud:
  base_url: {api}
  account_id: 7001
  api_token: {token}
  project_id: 7101
  tracked_jobs: [{job}]
  poll_interval_seconds: 0.5
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    from ade_platform.emulators.dbt_cloud import DEMO_TOKEN

    root = tmp_path_factory.mktemp("job_log")
    project = root / "log_shop"
    with environment({"ADE_DBT_CLOUD_EMULATOR_PROJECT": str(project)}):
        emulator_ctx = running_emulator(root / "emulator", history=False)
        emulator = emulator_ctx.__enter__()
    try:
        sections = DBT_CLOUD.format(api=emulator.api, token=DEMO_TOKEN, job=DAILY_JOB)
        toolsets = ("dbt-artifacts", "warehouse", "lineage", "dbt-cloud")
        with materialized_shop(root, "log_shop", None, toolsets, sections) as (_, settings):
            yield settings
    finally:
        emulator_ctx.__exit__(None, None, None)


def _run_job(settings: Settings) -> dict:
    from ade_platform.clients.dbt_cloud import DbtCloudClient

    with DbtCloudClient.from_settings(settings.dbt_cloud) as client:
        run = client.trigger_job(DAILY_JOB, "incident test")
        deadline = time.time() + 900
        while time.time() < deadline:
            found = client.get_run(run["id"], steps=False)
            if int(found.get("status") or 0) >= 10:
                return found
            time.sleep(1)
    raise AssertionError("the dbt Cloud run did not finish")


def test_a_failed_dbt_cloud_run_is_explained_from_dbt_error_in_its_log(shop: Settings) -> None:
    ok, graph = call_tool(
        build_server(shop), "lineage_trace", {"start_kind": "job", "start": str(DAILY_JOB), "system": "dbt_cloud",
                                              "direction": "downstream"},
    )  # fmt: skip
    assert ok and "orders" in {n["name"] for n in graph["nodes"]}, graph
    path = shop.dbt.project_dir / "models" / "orders.sql"  # type: ignore[union-attr]
    good = path.read_text()
    path.write_text("select order_id, status, amount, no_such_column from {{ ref('stg_orders') }}\n")
    try:
        run = _run_job(shop)
    finally:
        path.write_text(good)
    assert int(run["status"]) == 20, run  # failed
    ok, body = call_tool(
        build_server(shop),
        "lineage_explain_incident",
        {"start_kind": "job", "start": str(DAILY_JOB), "system": "dbt_cloud"},
    )
    assert ok, body
    symptom = body["symptom"]
    assert symptom["status"] == "failed" and symptom["columns"] == ["no_such_column"], symptom
    top = body["causes"][0]
    assert top["cause"] == "failed_model" and top["name"] == "orders", body["causes"][:3]
    assert top["evidence"]["from_log_of"] == symptom["node"] and top["evidence_source"]["source"] == "live", (
        top
    )
    assert "no_such_column" in (top["evidence"]["message"] or "") and body["confident"], body["verdict"]
    job = next(c for c in body["causes"] if c["cause"] == "failed_builder_run")
    assert job["rank"] > top["rank"]
    # the good run after it: the job is healthy again, and so is the answer
    assert int(_run_job(shop)["status"]) == 10
    ok, after = call_tool(
        build_server(shop),
        "lineage_explain_incident",
        {"start_kind": "job", "start": str(DAILY_JOB), "system": "dbt_cloud"},
    )
    assert ok and after["symptom"]["status"] == "ok" and not after["confident"], after["verdict"]
