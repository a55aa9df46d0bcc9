"""The Dagster code location loads, and every asset is grouped and described."""

from __future__ import annotations

import pytest

from ade_platform.config import Settings

pytestmark = pytest.mark.integration


def test_definitions_load_with_groups_descriptions_jobs_and_schedule(
    tmp_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ade_platform.definitions import EVERYTHING_JOB, METADATA_JOB, build_definitions

    defs = build_definitions(tmp_settings)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    expected = {
        "raw/customers", "raw/orders", "raw/payments",
        "stg_customers", "orders", "customers", "fct_payments_daily",
        "dbt_manifest", "dbt_catalog", "dbt_run_results", "dbt_sources", "dbt_lineage_index", "dbt_select_star",
        "warehouse_schema_demo",
    }  # fmt: skip
    assert expected <= keys
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name and node.group_name != "default", f"{key} has no group"
        assert node.description, f"{key} has no description"
    assert len(list(graph.asset_check_keys)) >= 10, "dbt tests should be asset checks"
    assert defs.resolve_job_def(METADATA_JOB) and defs.resolve_job_def(EVERYTHING_JOB)
    schedules = (
        {s.name for s in defs.resolve_all_schedule_defs()}
        if hasattr(defs, "resolve_all_schedule_defs")
        else set()
    )
    assert not schedules or "metadata_refresh_schedule" in schedules
    # dbt sources are wired to the Snowfakery dataset assets that produce them.
    assert graph.get(
        next(k for k in graph.get_all_asset_keys() if k.to_user_string() == "stg_customers")
    ).parent_keys

    # `dagster dev` re-parses the dbt project at load, with this environment's dbt: an MCP host or a service
    # manager that starts us need not have dbt on PATH.
    manifest = tmp_settings.dbt_target_path / "manifest.json"
    first = manifest.stat().st_mtime_ns
    monkeypatch.setenv("DAGSTER_IS_DEV_CLI", "1")
    monkeypatch.setenv("PATH", "/nonexistent")
    build_definitions(tmp_settings)
    assert manifest.stat().st_mtime_ns > first


def test_workspace_module_exposes_lazy_definitions() -> None:
    import ade_platform.definitions as module

    # Importing the module must not read settings or parse dbt: that happens when Dagster loads `defs`.
    assert callable(module.build_definitions)
    assert module.defs is not None
