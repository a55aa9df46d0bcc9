"""Dagster: the snowflake DDL repository asset, its schedule, and the staleness sensor (real snow CLI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from ade_platform.config import load_settings
from ade_platform.definitions import build_definitions
from ade_platform.defs.snowflake import GROUP, REPOSITORY_ASSET, STALENESS_ASSET, SYNC_JOB
from ade_platform.store import StoreReader
from tests.fakes.snowflake_stack import DATABASE, run_sql

pytestmark = pytest.mark.integration
PROBE = f"{DATABASE}.APP.SENSOR_PROBE"


@pytest.mark.slow  # syncs a DDL repository through the snow CLI: minutes (CI runs test-slow)
def test_repository_asset_schedule_and_staleness_sensor(
    snowflake_stack: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snowflake_stack.require_cli()
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    settings = load_settings(snowflake_stack.ade_yaml(tmp_path / "ade"), env={})
    defs = build_definitions(settings)
    graph = defs.resolve_asset_graph()
    node = graph.get(dg.AssetKey(REPOSITORY_ASSET))
    assert node.group_name == GROUP and node.description and "src/{DB}/{SCHEMA}" in node.description
    assert defs.resolve_schedule_def("snowflake_sync_schedule").cron_schedule == "0 3 * * *"
    sensor = defs.resolve_sensor_def("snowflake_staleness_sensor")

    run_sql(snowflake_stack.port, [f"CREATE OR REPLACE TABLE {PROBE} (ID NUMBER)"])
    instance = dg.DagsterInstance.ephemeral()
    result = defs.resolve_job_def(SYNC_JOB).execute_in_process(instance=instance)
    assert result.success
    snapshot = StoreReader(settings.store_root).latest(REPOSITORY_ASSET)
    assert snapshot.provenance.run_id == result.run_id
    keys = {o["key"] for o in snapshot.data["objects"]}
    assert PROBE in keys and not [k for k in keys if "PROD_HR" in k or k.endswith("_BACKUP")]
    root = settings.home / "snowflake" / "repository"
    assert (root / "src" / DATABASE / "APP" / "tables" / "SENSOR_PROBE.sql").exists()

    fresh = sensor(dg.build_sensor_context(instance=instance))
    assert not fresh.run_requests and "no synced" in fresh.skip_reason.skip_message
    run_sql(snowflake_stack.port, [f"ALTER TABLE {PROBE} ADD COLUMN NOTE VARCHAR"])
    (stale,) = sensor(dg.build_sensor_context(instance=instance)).run_requests
    assert PROBE in stale.tags["ade/stale_objects"]
    report = StoreReader(settings.store_root).latest(STALENESS_ASSET).data
    assert {o["objectName"] for o in report["stale"]} == {PROBE} and report["is_stale"]
