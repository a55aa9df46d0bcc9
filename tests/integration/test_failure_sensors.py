"""Every failure sensor (ade_platform/defs/failure_sensor.py) skips, saying which system at which address did not
answer, when that system is down: the code location of the demo with every optional section configured, each
SaaS, orchestrator, BI tool and Snowflake account pointed at a closed loopback port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from ade_platform.config import Settings, load_settings
from ade_platform.store import StoreWriter
from tests.conftest import REPO_ROOT
from tests.processes import free_port

pytestmark = pytest.mark.integration

SECRETS = {
    "DBT_CLOUD_API_TOKEN": "dbtc-token-never-shown",
    "AIRFLOW_PASSWORD": "airflow-password-never-shown",
    "ADE_LOOKER_CLIENT_ID": "looker-id-never-shown",
    "ADE_LOOKER_CLIENT_SECRET": "looker-secret-never-shown",
    "ADE_METABASE_API_KEY": "metabase-key-never-shown",
    "SF_PASSWORD": "snowflake-password-never-shown",
}
# What reads only the store (or the platform's own instance) is no failure sensor: nothing there can be down.
STORE_ONLY = {"lineage_automation_sensor", "live_observations_sensor", "warehouse_pii_sensor_demo"}
STORE_ONLY |= {"warehouse_pii_sensor_sf", "store_health_sensor"}
# profiles run after a build the store records (dbt_run_results): the warehouse is read by the job, not the sensor
STORE_ONLY |= {"profile_after_build_sensor_demo", "profile_after_build_sensor_sf"}
# incidents are detected from the store; the refresh it asks for runs as a job (whose steps name what fails)
STORE_ONLY |= {"incidents_sensor"}


def _config(home: Path, port: int) -> Path:
    """tests/contract/ade.all_toolsets.yaml's sections, every remote one at a port nobody listens on."""
    closed = f"http://127.0.0.1:{port}"
    (home / "snowflake").mkdir(parents=True)
    (home / "snowflake" / "config.toml").write_text(
        '[connections.closed]\naccount = "acme"\nuser = "ade"\npassword = "snowflake-password-never-shown"\n'
        f'host = "127.0.0.1"\nport = {port}\nprotocol = "http"\nlogin_timeout = 5\nnetwork_timeout = 5\n'
    )
    path = home / "ade.yaml"
    path.write_text(
        f"""
home: {home}
warehouses:
  demo: {{type: duckdb, path: "{home}/warehouse/demo.duckdb"}}
  sf:
    type: snowflake
    account: acme
    user: ade
    password: ${{SF_PASSWORD}}
    host: 127.0.0.1
    port: {port}
    protocol: http
dbt: {{project_dir: {REPO_ROOT}/dbt_demo, profiles_dir: {REPO_ROOT}/dbt_demo, target: dev, warehouse: demo}}
datasets: {{recipes_dir: {REPO_ROOT}/dbt_demo/recipes, warehouse: demo}}
snowflake:
  connection: closed
  config_file: {home}/snowflake/config.toml
  transport: connector
  timeout_seconds: 5
bi:
  warehouse: demo
  looker: {{base_url: "{closed}/looker", client_id: "${{ADE_LOOKER_CLIENT_ID}}",
            client_secret: "${{ADE_LOOKER_CLIENT_SECRET}}"}}
  metabase: {{base_url: "{closed}/metabase", api_key: "${{ADE_METABASE_API_KEY}}"}}
  timeout_seconds: 5
dbt_cloud:
  base_url: {closed}/api/v2
  account_id: 7001
  api_token: ${{DBT_CLOUD_API_TOKEN}}
  tracked_jobs: [7301]
orchestrators:
  airflow: {{base_url: "{closed}/airflow", username: admin, password: "${{AIRFLOW_PASSWORD}}", dags: [nightly]}}
  prefect: {{api_url: "{closed}/prefect/api", flows: [nightly]}}
limits: {{query_timeout_seconds: 5}}
"""
    )
    return path


def _inventory(tool: str) -> dict[str, Any]:
    """One dashboard with one runnable tile: the sensor has something to run, so it reaches the tool."""
    tile = {
        "id": "1", "title": "Revenue", "type": "vis", "look_id": None, "question_id": "1", "query_id": "1",
        "database_id": "1", "model": None, "explore": None, "sql": None, "dimensions": [], "measures": [],
        "columns": [], "tables": [], "runnable": True, "static_error": None,
    }  # fmt: skip
    dashboard = {
        "id": "1", "title": "Sales", "folder": None, "created_at": None, "last_updated_at": None,
        "view_count": None, "url": None, "elements": [tile],
    }  # fmt: skip
    return {"tool": tool, "dashboards": [dashboard]}


@pytest.fixture
def unreachable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, int]:
    from ade_platform.clients.snowflake import repository_root
    from ade_platform.lib.snowflake.sync import INDEX_FILE

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    port = free_port()
    home = tmp_path / "ade"
    home.mkdir()
    settings = load_settings(_config(home, port))
    writer = StoreWriter(settings.store_root)
    for tool in ("looker", "metabase"):
        writer.publish(f"bi_inventory_{tool}", _inventory(tool))
    # A synced repository: the staleness sensor has something to compare, so it reaches the account.
    root = repository_root(settings)
    root.mkdir(parents=True)
    (root / INDEX_FILE).write_text(json.dumps({"version": 1, "objects": []}))
    return settings, port


def test_each_failure_sensor_skips_naming_the_system_that_does_not_answer(unreachable) -> None:
    from ade_platform.definitions import build_definitions

    settings, port = unreachable
    closed = f"http://127.0.0.1:{port}"
    defs = build_definitions(settings)
    # failure sensor -> what its skip reason names: the system, and where it was looked for
    down = {
        "dbt_cloud_failed_run_sensor": [("dbt Cloud", f"{closed}/api/v2")],
        "orchestrator_failures_airflow": [("Airflow", f"{closed}/airflow")],
        "orchestrator_failures_prefect": [("Prefect", f"{closed}/prefect/api")],
        "bi_dashboard_error_sensor": [("looker", f"{closed}/looker"), ("metabase", f"{closed}/metabase")],
        "warehouse_drift_sensor_sf": [("warehouse 'sf'", closed)],
        "snowflake_staleness_sensor": [("Snowflake", f"{closed} (snow connection 'closed')")],
    }
    # Polled too, but what they poll is up here: the platform's own Dagster instance, the DuckDB file dbt
    # creates, a local target folder.
    up = {"orchestrator_failures_dagster", "warehouse_drift_sensor_demo", "dbt_target_folder_sensor"}
    sensors = {s.name: s for s in defs.sensors or []}
    assert set(sensors) - STORE_ONLY == set(down) | up

    instance = dg.DagsterInstance.ephemeral()
    results, reasons = {}, {}
    for name in sorted(set(down) | up):
        with dg.build_sensor_context(instance=instance) as context:
            results[name] = result = sensors[name](context)  # an exception here is what this test catches
        assert isinstance(result, dg.SensorResult), (name, result)
        if name == "dbt_target_folder_sensor":
            continue  # ADE's own parse of the project may just have written a manifest for it to publish
        assert not result.run_requests and result.skip_reason, (name, result)
        reasons[name] = result.skip_reason.skip_message
    for name, systems in down.items():
        for system, address in systems:
            assert f"{system} at {address} not readable now (" in reasons[name], (name, reasons[name])
    shown = "\n".join(reasons.values())
    assert "Traceback" not in shown and not any(secret in shown for secret in SECRETS.values()), shown
    # The BI tools were down, not their dashboards: no dashboard is recorded in error for the next tick to compare.
    assert json.loads(results["bi_dashboard_error_sensor"].cursor) == {}
