"""BridgeContext: what every toolset gets from it (a configured client, the newest snapshot, an audited call)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ade_platform.clients.dbt_cloud import DbtCloudError
from ade_platform.store import StoreWriter
from mcp_bridge.context import BridgeContext
from tests.conftest import settings_for


def test_a_client_is_opened_once_per_system_and_name(tmp_path: Path) -> None:
    # No dbt Cloud URL: the section is off even when a session fixture pointed the demo at its emulator.
    ctx = BridgeContext.from_settings(settings_for(tmp_path, ADE_DBT_CLOUD_URL=""))
    warehouse = ctx.client("warehouse", "demo")
    assert ctx.client("warehouse", "demo") is warehouse
    with pytest.raises(DbtCloudError) as refused:
        ctx.client("dbt_cloud")
    assert refused.value.code == "dbt_cloud_not_configured"


def test_latest_or_none(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    ctx = BridgeContext.from_settings(settings)
    assert ctx.latest_or_none("bi_inventory_looker") is None
    StoreWriter(settings.store_root).publish("bi_inventory_looker", {"dashboards": []}, run_id="r1")
    snapshot = ctx.latest_or_none("bi_inventory_looker")
    assert snapshot is not None and snapshot.provenance.run_id == "r1"


def test_a_live_call_returns_its_value_with_live_provenance(tmp_path: Path) -> None:
    ctx = BridgeContext.from_settings(settings_for(tmp_path))
    value, provenance = ctx.live_call("probe_tool", lambda: {"answer": 42}, arguments={"x": 1})
    assert value == {"answer": 42}
    assert provenance["source"] == "live" and provenance["run_id"]
