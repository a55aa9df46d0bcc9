"""The demo data stack end to end: Snowfakery -> DuckDB -> real dbt build / freshness / docs.

dbt runs against the repository's dbt_demo in place (nothing is copied); its target, logs and
database all go to a temporary directory so the repository stays clean.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ade_platform.lib.datasets import generate_dataset, load_into_duckdb

pytestmark = pytest.mark.integration

REPO_ROOT = Path(__file__).resolve().parents[2]
PROJECT_DIR = REPO_ROOT / "dbt_demo"
RECIPE = PROJECT_DIR / "recipes" / "jaffle_shop.recipe.yml"
# dbt is installed next to the interpreter running the tests
DBT = Path(sys.executable).parent / "dbt"


@dataclass(frozen=True)
class DbtRun:
    target: Path
    build: subprocess.CompletedProcess[str]
    build_results: dict[str, Any]
    freshness: subprocess.CompletedProcess[str]
    docs: subprocess.CompletedProcess[str]

    def artifact(self, name: str) -> dict[str, Any]:
        return json.loads((self.target / name).read_text())


def _dbt(
    command: list[str], *, target: Path, logs: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(DBT),
            *command,
            "--project-dir",
            str(PROJECT_DIR),
            "--profiles-dir",
            str(PROJECT_DIR),
            "--target-path",
            str(target),
            "--log-path",
            str(logs),
        ],
        cwd=target.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def dbt_run(tmp_path_factory: pytest.TempPathFactory) -> DbtRun:
    if not DBT.exists():
        pytest.skip(f"dbt not installed next to {sys.executable}")
    root = tmp_path_factory.mktemp("dbt_demo")
    database = root / "demo.duckdb"
    dataset = generate_dataset(RECIPE, root / "csv", seed=2024)
    load_into_duckdb(database, "raw", dataset.tables)

    env = {
        **os.environ,
        "ADE_DUCKDB_PATH": str(database),
        "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
    }
    target, logs = root / "target", root / "logs"
    build = _dbt(["build"], target=target, logs=logs, env=env)
    assert build.returncode == 0, build.stdout[-4000:]
    # read run_results now: the next commands overwrite it
    build_results = json.loads((target / "run_results.json").read_text())
    freshness = _dbt(["source", "freshness"], target=target, logs=logs, env=env)
    docs = _dbt(["docs", "generate"], target=target, logs=logs, env=env)
    return DbtRun(
        target=target,
        build=build,
        build_results=build_results,
        freshness=freshness,
        docs=docs,
    )


def test_build_succeeds_with_exactly_one_warning(dbt_run: DbtRun) -> None:
    results = dbt_run.build_results["results"]
    statuses = [result["status"] for result in results]
    assert not {"error", "fail", "skipped", "runtime error"} & set(statuses), statuses
    warned = [result["unique_id"] for result in results if result["status"] == "warn"]
    assert len(warned) == 1, warned
    assert warned[0].startswith("test.dbt_demo.accepted_values_stg_orders_status")


def test_source_freshness_pass_warn_error(dbt_run: DbtRun) -> None:
    # an errored source makes `dbt source freshness` exit 1, which is the point of the demo
    assert dbt_run.freshness.returncode == 1, dbt_run.freshness.stdout[-4000:]
    results = dbt_run.artifact("sources.json")["results"]
    by_table = {result["unique_id"].rsplit(".", 1)[-1]: result["status"] for result in results}
    assert by_table == {"customers": "pass", "orders": "warn", "payments": "error"}


def test_docs_generate_writes_catalog(dbt_run: DbtRun) -> None:
    assert dbt_run.docs.returncode == 0, dbt_run.docs.stdout[-4000:]
    catalog = dbt_run.artifact("catalog.json")
    assert "model.dbt_demo.customers" in catalog["nodes"]
    assert {
        "source.dbt_demo.raw.customers",
        "source.dbt_demo.raw.orders",
        "source.dbt_demo.raw.payments",
    } <= set(catalog["sources"])


def test_manifest_shape(dbt_run: DbtRun) -> None:
    manifest = dbt_run.artifact("manifest.json")
    models = {node["name"]: node for node in manifest["nodes"].values() if node["resource_type"] == "model"}
    assert {"stg_customers", "stg_orders", "stg_payments", "customers", "orders"} <= set(models)

    exposures = list(manifest["exposures"].values())
    assert len(exposures) == 1
    assert exposures[0]["owner"]["email"]
    assert {"model.dbt_demo.customers", "model.dbt_demo.orders"} <= set(exposures[0]["depends_on"]["nodes"])

    incremental = [name for name, node in models.items() if node["config"]["materialized"] == "incremental"]
    assert incremental == ["fct_payments_daily"]

    pii_columns = [
        (name, column)
        for name, node in models.items()
        for column, info in node["columns"].items()
        if "pii" in info.get("tags", [])
    ]
    assert pii_columns == [("stg_customers", "email")]

    assert "staging" in models["stg_orders"]["tags"]
    assert {"marts", "finance"} <= set(models["fct_payments_daily"]["tags"])
    assert all(info["description"] for info in models["customers"]["columns"].values())
    assert all(info["description"] for info in models["orders"]["columns"].values())


def test_dbt_writes_only_to_the_temporary_directory(dbt_run: DbtRun) -> None:
    assert (dbt_run.target / "manifest.json").exists()
    assert (dbt_run.target.parent / "logs" / "dbt.log").exists()
    # Other runs (Dagster's dbt assets, a developer) may legitimately use dbt_demo/target and
    # dbt_demo/logs, so look for this test's own invocations there rather than for the folders.
    invocations = {
        dbt_run.build_results["metadata"]["invocation_id"],
        dbt_run.artifact("sources.json")["metadata"]["invocation_id"],
        dbt_run.artifact("catalog.json")["metadata"]["invocation_id"],
    }
    leaked = [
        path
        for folder in (PROJECT_DIR / "target", PROJECT_DIR / "logs")
        if folder.is_dir()
        for path in folder.rglob("*")
        if path.suffix in (".json", ".log")
        and path.is_file()
        and any(invocation in path.read_text(errors="replace") for invocation in invocations)
    ]
    assert leaked == []
    assert not (PROJECT_DIR / ".user.yml").exists()
