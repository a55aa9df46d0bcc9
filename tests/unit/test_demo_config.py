"""The demo configuration works on its own: every SaaS section is off until its emulator's URL is set."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import settings_for


def test_saas_sections_are_off_without_their_emulators(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, ADE_DBT_CLOUD_URL="", ADE_LOOKER_URL="", ADE_METABASE_URL="")
    assert settings.dbt_cloud is None
    assert settings.bi.tools == []


def test_dbt_cloud_is_on_once_its_url_is_set(tmp_path: Path) -> None:
    settings = settings_for(
        tmp_path, ADE_DBT_CLOUD_URL="http://127.0.0.1:9/api/v2", DBT_CLOUD_API_TOKEN="dbtc_test_token_value"
    )
    assert settings.dbt_cloud is not None
    assert settings.dbt_cloud.base_url == "http://127.0.0.1:9/api/v2"
    assert settings.dbt_cloud.tracked_jobs == [7301, 7303]


def test_snowflake_is_off_until_its_stand_in_is_set_and_uses_the_connector(tmp_path: Path) -> None:
    assert settings_for(tmp_path, ADE_SNOWFLAKE_CONFIG="").snowflake is None
    on = settings_for(tmp_path, ADE_SNOWFLAKE_CONFIG=str(tmp_path / "config.toml")).snowflake
    assert on is not None and on.transport == "connector" and on.connection == "demo"
    assert on.exclusions.patterns == ["*.HR.*"]
    cli = settings_for(tmp_path, ADE_SNOWFLAKE_CONFIG=str(tmp_path / "c.toml"), ADE_SNOWFLAKE_TRANSPORT="cli")
    assert cli.snowflake is not None and cli.snowflake.transport == "cli"


def test_airflow_and_prefect_are_off_until_demo_full_sets_them(tmp_path: Path) -> None:
    off = settings_for(tmp_path, ADE_AIRFLOW_URL="", ADE_PREFECT_URL="").orchestrators
    assert off.airflow is None and off.prefect is None
    on = settings_for(
        tmp_path,
        ADE_AIRFLOW_URL="http://127.0.0.1:9",
        ADE_AIRFLOW_USER="ade",
        ADE_PREFECT_URL="http://127.0.0.1:9/api",
    ).orchestrators
    assert on.airflow is not None and on.airflow.dags == [
        "dbt_demo_build",
        "dbt_demo_broken",
        "dbt_demo_retrying",
    ]
    assert on.prefect is not None and on.prefect.flows == on.airflow.dags
