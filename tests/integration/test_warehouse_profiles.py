"""Data profiles as a Dagster asset on a copy of the demo: every dbt relation profiled, personal data counted only,
silent faults planted in the raw data flagged by the monitor checks, and the after-build sensor."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import orjson
import pytest

from ade_platform.config import Settings
from ade_platform.lib.profiles.monitors import MONITORS
from ade_platform.store import StoreReader, StoreWriter
from ade_platform.store.profiles import latest_profile, profile_history
from tests.integration.test_warehouse_faults import checks, definitions, plant
from tests.mcp.test_warehouse_tools import copy_demo

pytestmark = pytest.mark.integration
ASSET = "warehouse_profiles_demo"


@pytest.fixture
def demo_copy(demo_settings: Settings, tmp_path: Path) -> Settings:
    return copy_demo(demo_settings, tmp_path / "ade")


def _profile_run(defs: dg.Definitions, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def("profile_warehouse").execute_in_process(instance=instance)


def _relation(reader: StoreReader, name: str) -> str:
    found = [p.relation for p in _all_latest(reader) if p.relation.endswith(name)]
    assert len(found) == 1, found
    return found[0]


def _all_latest(reader: StoreReader) -> list:
    from ade_platform.store.profiles import latest_profiles

    return latest_profiles(reader, "demo")


def test_profiles_every_relation_and_flags_silent_faults(demo_copy: Settings) -> None:
    defs = definitions(demo_copy)
    instance = dg.DagsterInstance.ephemeral()
    first = _profile_run(defs, instance)
    assert first.success
    found = checks(first)
    assert {e.check_name for e in found.values()} == {
        f"profile_{m}" if m != "freshness" else "profile_freshness_cadence" for m in MONITORS
    }
    assert all(e.passed for e in found.values()), {n: e.metadata for n, e in found.items() if not e.passed}
    reader = StoreReader(demo_copy.store_root)
    summary = reader.latest(ASSET).data
    assert summary["skipped"] == 0 and summary["profiled"] == summary["targets"] >= 10
    payments = _relation(reader, "raw.payments")
    before = latest_profile(reader, "demo", payments)
    assert before is not None and before.duplicates == {"id": 0}
    assert before.columns["payment_method"].top is not None

    # Personal data: counted, never kept (the tagged email, and names the PII patterns know).
    customers = latest_profile(reader, "demo", _relation(reader, "main.stg_customers"))
    assert customers is not None
    for column in ("email", "phone", "full_name"):
        profiled = customers.columns[column]
        assert profiled.protected and profiled.top is None and profiled.min is None and profiled.distinct
    stored = orjson.dumps([p.as_state() for p in _all_latest(reader)]).decode()
    assert "@" not in stored

    gone = before.columns["payment_method"].top[0][0]
    plant(
        demo_copy,
        f"delete from raw.payments where payment_method = '{gone}'",
        "insert into raw.orders select * from raw.orders order by id limit 4",
    )
    second = _profile_run(defs, instance)
    flagged = checks(second)
    mix = flagged["profile_value_mix"]
    assert not mix.passed and mix.severity == dg.AssetCheckSeverity.WARN
    assert f"`{gone}`" in mix.metadata["flagged"].value and "raw.payments" in mix.metadata["flagged"].value
    dupes = flagged["profile_duplicates"]
    assert not dupes.passed and dupes.severity == dg.AssetCheckSeverity.ERROR
    assert "raw.orders" in dupes.metadata["flagged"].value and "0 \u2192 4" in dupes.metadata["flagged"].value
    assert len(profile_history(reader, "demo", payments)) == len(
        profile_history(reader, "demo", payments, None)
    )
    assert [p.row_count for p in profile_history(reader, "demo", payments)][-1] < before.row_count


def test_the_after_build_sensor_profiles_each_new_build_once(demo_copy: Settings) -> None:
    defs = definitions(demo_copy)
    instance = dg.DagsterInstance.ephemeral()
    sensor = defs.resolve_sensor_def("profile_after_build_sensor_demo")
    reader = StoreReader(demo_copy.store_root)
    covered = sensor(dg.build_sensor_context(instance=instance))
    assert not covered.run_requests and "already cover" in covered.skip_reason.skip_message

    results = reader.latest("dbt_run_results")
    data = {
        **results.data,
        "metadata": {**results.data.get("metadata", {}), "invocation_id": "another-build"},
    }
    StoreWriter(demo_copy.store_root).publish("dbt_run_results", data, run_id="test", source={"path": "test"})
    context = dg.build_sensor_context(instance=instance)
    (request,) = sensor(context).run_requests
    assert request.tags["ade/reason"] == "dbt build"
    again = sensor(dg.build_sensor_context(instance=instance, cursor=context.cursor))
    assert not again.run_requests
