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
        "warehouse_schema_demo", "warehouse_profiles_demo",
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
    assert not schedules or {"metadata_refresh_schedule", "profile_schedule"} <= schedules
    assert defs.resolve_job_def("profile_warehouse")
    assert defs.resolve_sensor_def("profile_after_build_sensor_demo")
    profile_checks = {
        k.name for k in graph.asset_check_keys if k.asset_key.to_user_string() == "warehouse_profiles_demo"
    }
    assert profile_checks == {
        "profile_volume", "profile_freshness_cadence", "profile_null_rate", "profile_duplicates", "profile_value_mix",
    }  # fmt: skip
    # dbt sources are wired to the Snowfakery dataset assets that produce them.
    assert graph.get(
        next(k for k in graph.get_all_asset_keys() if k.to_user_string() == "stg_customers")
    ).parent_keys

    # `dagster dev` re-parses the dbt project at load, with this environment's dbt: an MCP host or a service
    # manager that starts us need not have dbt on PATH.
    manifest = tmp_settings.dbt_own_output / "target" / "manifest.json"
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


def test_building_definitions_writes_no_environment_variable(tmp_settings: Settings) -> None:
    import os

    from ade_platform.definitions import build_definitions

    before = dict(os.environ)
    defs = build_definitions(tmp_settings)
    assert dict(os.environ) == before
    # What dbt reads from its environment (profiles.yml: ADE_DUCKDB_PATH) travels with its resource instead.
    demo = tmp_settings.warehouses["demo"]
    assert defs.resources["dbt"].env == {"ADE_DUCKDB_PATH": str(demo.path)}


def test_secrets_reach_dagster_resources_by_the_name_of_their_variable(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    import dagster_snowflake  # noqa: F401  (imported first: snowflake-connector's import sets an Arrow variable)
    from dagster import EnvVar

    from ade_platform.config import load_settings
    from ade_platform.defs.resources import StoreResource
    from ade_platform.defs.warehouse.resources import warehouse_resources

    config = tmp_path / "ade.yaml"
    config.write_text(
        "home: ./home\nstore:\n  root: s3://bucket/store\n  s3:\n    access_key_id: ${T_KEY}\n"
        "    secret_access_key: ${T_SECRET}\nwarehouses:\n"
        "  sf:\n    type: snowflake\n    account: a\n    user: u\n    password: ${T_SF_PASSWORD}\n"
        "  literal:\n    type: snowflake\n    account: a\n    user: u\n    password: written-in-the-file\n"
    )
    for name, value in {"T_KEY": "key-id", "T_SECRET": "s3-secret", "T_SF_PASSWORD": "sf-secret"}.items():
        monkeypatch.setenv(name, value)
    before = dict(os.environ)
    settings = load_settings(config)
    store = StoreResource.from_settings(settings)
    resources = warehouse_resources(settings)
    assert dict(os.environ) == before
    assert store.s3_access_key_id == EnvVar("T_KEY") and store.s3_secret_access_key == EnvVar("T_SECRET")
    assert resources["warehouse_sf"].password == EnvVar("T_SF_PASSWORD")
    # A literal never becomes the resource's config (the UI would show it): the client takes it from the settings.
    literal = resources["warehouse_literal"]
    assert literal.password is None and literal.authenticator == "snowflake"
    assert not any(secret in repr(resources) for secret in ("sf-secret", "written-in-the-file"))
