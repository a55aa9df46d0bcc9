"""dbt-project through MCP on a project written by the test: the five tools, compiled SQL lookup, and
paths that try to leave the project root."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tool, call_tools
from tests.mcp.dbt_support import PROJECT, manifest, model, serve_target, source, write
from tests.mcp.shape_check import assert_answers_match_their_schemas

STG = f"model.{PROJECT}.stg_orders"


@pytest.fixture
def project(tmp_settings: Settings, tmp_path: Path) -> Settings:
    root = tmp_path / "proj"
    (root / "models" / "staging").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        f"name: {PROJECT}\nprofile: {PROJECT}\nmodel-paths: [models]\n"
        "vars:\n  start: '2025-01-01'\nmodels:\n  shop:\n    +materialized: view\n"
    )
    (root / "profiles.yml").write_text("shop: {outputs: {dev: {password: hunter2}}}\n")
    (root / "models" / "staging" / "stg_orders.sql").write_text(
        "select *\nfrom {{ source('raw', 'orders') }}\n"
    )
    (root / "models" / "orders.sql").write_text("-- orders\nselect * from {{ ref('stg_orders') }}\n")
    (root / "models" / "staging" / "schema.yml").write_text(
        "version: 2\nmodels:\n  - name: stg_orders\n    columns:\n      - name: id\n        tests: [not_null]\n"
    )
    (root / "models" / "bad.yml").write_text("models: [\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secrets.yml").write_text("token: x\n")
    (root / "models" / "escape.yml").symlink_to(outside / "secrets.yml")
    graph = manifest(
        source("orders"),
        model("stg_orders", [f"source.{PROJECT}.raw.orders"], tags=["staging"]),
        model("orders", [STG], materialized="incremental", tags=["finance", "daily"], schema="marts"),
    )
    graph["nodes"][STG]["original_file_path"] = "models/staging/stg_orders.sql"
    target = write(root / "target", manifest=graph)
    compiled = target / "dbt_project_models-1a2b3c4-5d6e7f8" / "compiled" / PROJECT / "models" / "staging"
    compiled.mkdir(parents=True)
    (compiled / "stg_orders.sql").write_text('select *\nfrom "db"."raw"."orders"\n')
    return serve_target(tmp_settings, target, project=root)


def test_read_model_sql_raw_and_compiled(project: Settings) -> None:
    calls = [
        ("fs_read_model_sql", {"model_name": "stg_orders"}),
        ("fs_read_model_sql", {"model_name": "stg_orders", "compiled": True}),
        ("fs_read_model_sql", {"model_name": "orders", "compiled": True}),
        ("fs_read_model_sql", {"model_name": "nope"}),
        ("fs_read_model_sql", {"model_name": "../profiles"}),
    ]
    (ok_raw, raw), (ok_comp, comp), (ok_missing, missing), (_, nope), (_, bad) = call_tools(
        build_server(project, only="dbt-project"), calls
    )
    assert ok_raw and "{{ source('raw', 'orders') }}" in raw["sql"] and raw["line_count"] == 2
    assert raw["file_path"].endswith("models/staging/stg_orders.sql") and raw["last_modified"].endswith("Z")
    assert (
        ok_comp and '"db"."raw"."orders"' in comp["sql"] and comp["compiled_source"] == "target_compiled_file"
    )
    assert not ok_missing and missing["error"] == "compiled_not_found" and missing["model_name"] == "orders"
    assert nope["error"] == "model_not_found" and nope["model_name"] == "nope"
    assert bad["error"] == "invalid_argument"


def test_schema_yaml_and_project_config(project: Settings) -> None:
    calls = [
        ("fs_read_schema_yaml", {"schema_path": "models/staging/schema.yml"}),
        ("fs_read_project_config", {}),
    ]
    (ok_yaml, schema), (ok_cfg, cfg) = call_tools(build_server(project, only="dbt-project"), calls)
    assert ok_yaml and schema["content"]["models"][0]["columns"][0]["tests"] == ["not_null"]
    assert (
        ok_cfg
        and cfg["content"]["vars"] == {"start": "2025-01-01"}
        and cfg["file_path"].endswith("dbt_project.yml")
    )


@pytest.mark.parametrize(
    "path,code",
    [
        ("../elsewhere/secrets.yml", "path_not_allowed"),
        ("models/escape.yml", "path_not_allowed"),
        ("/etc/hosts", "path_not_allowed"),
        ("profiles.yml", "path_not_allowed"),
        ("models/orders.sql", "path_not_allowed"),
        ("models/missing.yml", "file_not_found"),
        ("models/bad.yml", "yaml_invalid"),
    ],
)
def test_schema_yaml_refusals(project: Settings, path: str, code: str) -> None:
    ok, payload = call_tool(
        build_server(project, only="dbt-project"), "fs_read_schema_yaml", {"schema_path": path}
    )
    assert not ok and payload["error"] == code, payload
    assert "hunter2" not in json.dumps(payload)


@pytest.mark.parametrize(
    "args,names",
    [
        ({}, ["orders", "stg_orders"]),
        ({"tag": "finance"}, ["orders"]),
        ({"tag": "FINANCE", "materialization": "incremental"}, ["orders"]),
        ({"schema": "analytics"}, ["stg_orders"]),
        ({"materialization": "table"}, []),
    ],
)
def test_list_models_filters(project: Settings, args: dict[str, Any], names: list[str]) -> None:
    ok, listing = call_tool(build_server(project, only="dbt-project"), "fs_list_models", args)
    assert ok and sorted(m["model_name"] for m in listing["models"]) == names
    assert listing["provenance"]["asset"] == "dbt_lineage_index"


def test_find_models_referencing(project: Settings) -> None:
    calls = [
        ("fs_find_models_referencing", {"source_or_model": "stg_orders"}),
        ("fs_find_models_referencing", {"source_or_model": "raw.orders"}),
        ("fs_find_models_referencing", {"source_or_model": "a.b.c"}),
    ]
    (_, refs), (_, srcs), (ok_bad, bad) = call_tools(build_server(project, only="dbt-project"), calls)
    assert refs["references"] == [
        {"model_name": "orders", "file_path": "models/orders.sql", "reference_type": "ref",
         "reference_expression": "ref('stg_orders')", "line_number": 2}
    ]  # fmt: skip
    assert [(r["model_name"], r["line_number"]) for r in srcs["references"]] == [("stg_orders", 2)]
    assert not ok_bad and bad["error"] == "invalid_argument"


def test_files_only_without_a_manifest(tmp_settings: Settings, tmp_path: Path) -> None:
    from ade_platform.config import DbtSettings

    root = tmp_path / "fresh"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text("name: fresh\n")
    (root / "models" / "a.sql").write_text("select 1\n")
    settings = tmp_settings.model_copy(
        update={
            "dbt": DbtSettings(project_dir=root, target_path=root / "target"),
            "store": tmp_settings.store.model_copy(update={"root": str(tmp_path / "store")}),
        }
    )
    calls = [
        ("fs_list_models", {}),
        ("fs_list_models", {"tag": "x"}),
        ("fs_read_model_sql", {"model_name": "a"}),
        ("fs_read_model_sql", {"model_name": "a", "compiled": True}),
    ]
    (ok, listing), (ok_tag, tag), (ok_sql, sql), (ok_comp, comp) = call_tools(
        build_server(settings, only="dbt-project"), calls
    )
    assert ok and listing["models"] == [{"model_name": "a", "file_path": "models/a.sql"}]
    assert not ok_tag and tag["error"] == "asset_not_materialized"
    assert ok_sql and sql["sql"] == "select 1\n" and sql["node_id"] is None
    assert not ok_comp and comp["error"] == "compiled_not_found"


def test_compiled_sql_from_the_manifest_names_its_compiled_path(
    tmp_settings: Settings, tmp_path: Path
) -> None:
    root = tmp_path / "proj2"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(f"name: {PROJECT}\nmodel-paths: [models]\n")
    (root / "models" / "orders.sql").write_text("select * from {{ source('raw', 'orders') }}\n")
    graph = manifest(
        source("orders"), model("orders", [f"source.{PROJECT}.raw.orders"], compiled="select 42")
    )
    graph["nodes"][f"model.{PROJECT}.orders"]["compiled_path"] = (
        f"target/compiled/{PROJECT}/models/orders.sql"
    )
    target = write(
        root / "target", manifest=graph
    )  # no compiled file on disk: the SQL comes from the manifest
    settings = serve_target(tmp_settings, target, project=root)
    ok, body = call_tool(
        build_server(settings, only="dbt-project"),
        "fs_read_model_sql",
        {"model_name": "orders", "compiled": True},
    )
    assert ok, body
    assert (body["sql"], body["compiled_source"]) == ("select 42", "manifest")
    assert (
        body["file_path"] == f"target/compiled/{PROJECT}/models/orders.sql" and body["last_modified"] is None
    )


def test_every_answer_is_described_by_its_output_schema(project: Settings) -> None:
    assert_answers_match_their_schemas(
        build_server(project, only="dbt-project"),
        [
            ("fs_read_model_sql", {"model_name": "stg_orders"}),
            ("fs_read_model_sql", {"model_name": "stg_orders", "compiled": True}),
            ("fs_read_schema_yaml", {"schema_path": "models/staging/schema.yml"}),
            ("fs_read_project_config", {}),
            ("fs_list_models", {}),
            ("fs_list_models", {"tag": "finance"}),
            ("fs_find_models_referencing", {"source_or_model": "stg_orders"}),
        ],
    )
