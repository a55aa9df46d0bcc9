"""dbt-artifacts through MCP on small synthetic projects: the cases public artifacts do not have (PII tags
and masking, failures and skips), artifact paths, and a structured error for every kind of bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import PiiPatternSettings, PiiSettings, Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tool, call_tools
from tests.mcp.dbt_support import (
    PROJECT,
    catalog,
    generic_test,
    manifest,
    model,
    run_results,
    schema_url,
    serve_target,
    source,
    write,
)
from tests.mcp.shape_check import assert_answers_match_their_schemas

RAW = f"source.{PROJECT}.raw.customers"
STG = f"model.{PROJECT}.stg_customers"
MART = f"model.{PROJECT}.customers"


def _artifacts() -> dict[str, Any]:
    graph = manifest(
        source("customers"),
        model(
            "stg_customers",
            [RAW],
            columns={
                "email": {"tags": ["pii"], "meta": {"masking_policy": "email_mask"}},
                "phone": {"meta": {"contains_pii": True}},
                "full_name": {},
                "customer_id": {},
            },
            compiled='with s as (select * from "db"."raw"."customers") select id as customer_id, email, phone, '
            "full_name, ssn from s",
        ),
        model(
            "customers",
            [STG],
            compiled='select * from "db"."analytics"."stg_customers"',
            materialized="table",
        ),
        model("twin", [], schema="other"),
        generic_test("not_null", STG, "customer_id"),
        generic_test("unique", MART, "customer_id"),
    )
    graph["nodes"]["model.other_pkg.twin"] = {
        **graph["nodes"][f"model.{PROJECT}.twin"],
        "package_name": "other_pkg",
    }
    graph["metadata"]["project_name"] = "third"  # neither twin belongs to the root project: ambiguous
    cat = catalog(
        {
            RAW: [
                ("id", "INT"),
                ("email", "TEXT"),
                ("phone", "TEXT"),
                ("full_name", "TEXT"),
                ("ssn", "TEXT"),
            ],
            STG: [
                ("customer_id", "INT"),
                ("email", "TEXT"),
                ("phone", "TEXT"),
                ("full_name", "TEXT"),
                ("ssn", "TEXT"),
            ],
        }
    )
    rr = run_results(
        {STG: "error", MART: "skipped", f"test.{PROJECT}.unique_customers_customer_id.abc": "skipped"},
        messages={STG: "Database Error: relation raw.customers does not exist"},
    )
    return {"manifest": graph, "catalog": cat, "run_results": rr}


@pytest.fixture
def project(tmp_settings: Settings, tmp_path: Path) -> Settings:
    target = write(tmp_path / "target", **_artifacts())
    settings = serve_target(tmp_settings, target, project=tmp_path)
    return settings.model_copy(
        update={
            "pii": PiiSettings(
                patterns=[PiiPatternSettings(name="national_id", regex="ssn", risk_level="high")]
            )
        }
    )


def test_pii_positives_with_tags_masking_and_configured_patterns(project: Settings) -> None:
    ok, report = call_tool(build_server(project, only="dbt-artifacts"), "dbt_scan_pii_risk", {})
    assert ok, report
    rows = {(f["node_id"], f["column_name"]): f for f in report["findings"]}
    email = rows[(STG, "email")]
    assert email["has_pii_tag"] and email["has_masking_policy"] and email["risk_level"] == "low"
    assert rows[(STG, "phone")]["has_pii_tag"] and rows[(STG, "phone")]["risk_level"] == "high"
    assert (
        rows[(STG, "full_name")]["pii_pattern_matched"] == "name"
        and not rows[(STG, "full_name")]["has_pii_tag"]
    )
    # the configured pattern wins over the built-in ssn one
    assert rows[(STG, "ssn")]["pii_pattern_matched"] == "national_id"
    assert (
        rows[(RAW, "email")]["model_name"] == "raw.customers"
        and rows[(RAW, "email")]["declared_in"] == "catalog"
    )
    assert report["findings"][0]["risk_level"] == "high" and report["findings"][-1]["risk_level"] == "low"
    assert report["provenance"]["asset"] == "dbt_lineage_index"
    assert report["provenance"]["inputs"][0]["asset"] == "dbt_catalog"


def test_pii_ignore_setting_unflags_a_name_through_mcp(project: Settings) -> None:
    settings = project.model_copy(update={"pii": PiiSettings(ignore=[r"^full_name$"])})
    ok, report = call_tool(build_server(settings, only="dbt-artifacts"), "dbt_scan_pii_risk", {})
    assert ok, report
    columns = {f["column_name"] for f in report["findings"]}
    assert "full_name" not in columns and {"email", "ssn"} <= columns


def test_failed_and_skipped(project: Settings) -> None:
    ok, result = call_tool(build_server(project, only="dbt-artifacts"), "dbt_get_failed_models", {})
    assert ok, result
    assert [f["node_id"] for f in result["failed"]] == [STG]
    assert result["failed"][0]["error_message"].startswith("Database Error")
    assert {s["node_id"]: s["upstream_failure"] for s in result["skipped"]} == {
        MART: STG,
        f"test.{PROJECT}.unique_customers_customer_id.abc": STG,
    }
    assert (result["total_failed"], result["total_skipped"], result["total_passed"]) == (1, 2, 0)
    assert result["run_id"] == "inv-1" and result["provenance"]["asset"] == "dbt_run_results"


def test_silent_skip_names_a_pattern_that_matches_nothing(project: Settings) -> None:
    ok, result = call_tool(
        build_server(project, only="dbt-artifacts"),
        "dbt_detect_silent_skip",
        {"expected_patterns": ["stg_*", "dim_customers"]},
    )
    assert ok, result
    by = {p["pattern"]: p for p in result["patterns"]}
    assert by["dim_customers"] == {
        "pattern": "dim_customers",
        "expected_match_count": 0,
        "actual_match_count": 0,
        "missing_models": ["dim_customers"],
        "missing_node_ids": [],
        "severity": "warning",
        "reason": "no_match",
    }
    assert by["stg_*"]["severity"] == "ok" and by["stg_*"]["reason"] is None
    assert result["all_satisfied"] is False


def test_select_star_and_column_lineage(project: Settings) -> None:
    calls = [
        ("dbt_find_select_star", {}),
        ("dbt_find_select_star", {"final_only": True}),
        ("dbt_get_column_lineage", {"node_id": "customers", "column_name": "email"}),
        ("dbt_get_column_lineage", {"node_id": "stg_customers", "column_name": "customer_id"}),
    ]
    (_, star), (_, final), (_, email), (_, cid) = call_tools(
        build_server(project, only="dbt-artifacts"), calls
    )
    by = {m["model_name"]: m for m in star["models"]}
    assert by["customers"]["propagates_upstream_columns"] and not by["stg_customers"]["final_select_star"]
    flags = [m["propagates_upstream_columns"] for m in star["models"]]
    assert flags == sorted(flags, reverse=True)  # the propagating ones first
    assert "stg_customers" not in {m["model_name"] for m in final["models"]}
    # customers has no catalog entry: its columns come through stg_customers' catalog columns
    assert email["resolved"] and email["upstream"][0]["node_id"] == STG
    assert cid["upstream"] == [
        {"node_id": RAW, "name": "customers", "relation": "db.raw.customers", "column_name": "id",
         "transformation": "direct"}
    ]  # fmt: skip


def test_artifact_paths_are_accepted_and_confined(project: Settings, tmp_path: Path) -> None:
    target = project.dbt_target_path
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (outside / "run_results.json").write_text(json.dumps(run_results({STG: "success"})))
    (target / "escape.json").symlink_to(outside / "run_results.json")
    v3 = write(tmp_path / "old", run_results=run_results({STG: "success"}, version=3))
    future = write(tmp_path / "future", manifest=manifest(model("a"), version=13))
    calls = [
        ("dbt_get_failed_models", {"run_results_path": str(target / "run_results.json")}),
        ("dbt_get_failed_models", {"run_results_path": "target/run_results.json"}),
        ("dbt_get_failed_models", {"run_results_path": str(outside / "run_results.json")}),
        ("dbt_get_failed_models", {"run_results_path": "../" + outside.name + "/run_results.json"}),
        ("dbt_get_failed_models", {"run_results_path": str(target / "escape.json")}),
        ("dbt_get_failed_models", {"run_results_path": str(v3 / "run_results.json")}),
        ("dbt_find_select_star", {"manifest_path": str(future / "manifest.json")}),
        ("dbt_get_failed_models", {"run_results_path": str(target / "missing.json")}),
        ("dbt_scan_pii_risk", {"catalog_path": str(target / "missing.json")}),
        ("dbt_get_source_freshness", {"sources_path": str(target / "missing.json")}),
        ("dbt_get_failed_models", {"run_results_path": str(target / "manifest.json")}),
        (
            "dbt_scan_pii_risk",
            {"manifest_path": str(target / "manifest.json"), "catalog_path": str(target / "catalog.json")},
        ),
    ]
    answers = call_tools(build_server(project, only="dbt-artifacts"), calls)
    (ok_abs, by_abs), (ok_rel, by_rel) = answers[0], answers[1]
    assert ok_abs and ok_rel and by_abs["total_failed"] == by_rel["total_failed"] == 1
    assert by_abs["provenance"]["source"] == "file"
    codes = [payload.get("error") for _, payload in answers[2:]]
    assert codes == [
        "path_not_allowed",
        "path_not_allowed",
        "path_not_allowed",
        "unsupported_artifact_version",
        "unsupported_artifact_version",
        "artifact_not_found",
        "catalog_not_found",
        "sources_not_found",
        "unsupported_artifact_version",  # a manifest given as run results
        None,
    ]
    assert answers[-1][1]["provenance"]["source"] == "file" and answers[-1][1]["total"] >= 4
    # A refusal that helps: the settings that admit folders, and "omit the path" when the target has one.
    refused = answers[2][1]
    assert {r["setting"] for r in refused["allowed_roots"]} == {"dbt.project_dir", "dbt.target_path", "home"}
    assert refused["omit_path_to_use_target"] is True and "omit the path" in refused["hint"]
    assert "dbt.artifact_roots" in refused["hint"]
    # dbt.artifact_roots admits another folder (e.g. a second target).
    admitted = project.model_copy(
        update={"dbt": project.dbt.model_copy(update={"artifact_roots": [outside]})}
    )
    ok, body = call_tools(
        build_server(admitted, only="dbt-artifacts"),
        [("dbt_get_failed_models", {"run_results_path": str(outside / "run_results.json")})],
    )[0]
    assert ok and body["provenance"]["source"] == "file" and body["total_failed"] == 0


@pytest.mark.parametrize(
    "tool,args,code",
    [
        ("dbt_get_lineage", {"node_id": "nope", "direction": "upstream"}, "node_not_found"),
        ("dbt_get_lineage", {"node_id": "twin", "direction": "upstream"}, "ambiguous_node"),
        ("dbt_get_lineage", {"node_id": "stg_customers", "direction": "sideways"}, "invalid_argument"),
        (
            "dbt_get_lineage",
            {"node_id": "stg_customers", "direction": "upstream", "depth": -1},
            "invalid_argument",
        ),
        ("dbt_get_blast_radius", {"node_id": ""}, "invalid_argument"),
        ("dbt_get_model_tests", {"model_name": "stg_custmers"}, "model_not_found"),
        ("dbt_get_schema", {"model_name": "stg_customers", "source": "warehouse"}, "invalid_argument"),
        ("dbt_detect_silent_skip", {"expected_patterns": ["stg_["]}, "invalid_pattern"),
        ("dbt_detect_silent_skip", {"expected_patterns": []}, "invalid_argument"),
        ("dbt_scan_pii_risk", {"extra_patterns": ["(unclosed"]}, "invalid_regex"),
        ("dbt_get_column_lineage", {"node_id": "stg_customers", "column_name": "nope"}, "column_not_found"),
        ("dbt_get_source_freshness", {}, "sources_not_found"),
    ],
)
def test_bad_input_is_a_structured_error(
    project: Settings, tool: str, args: dict[str, Any], code: str
) -> None:
    ok, payload = call_tool(build_server(project, only="dbt-artifacts"), tool, args)
    assert not ok and payload["error"] == code, payload
    assert payload["detail"] and payload["hint"]


def test_missing_catalog_and_empty_store(tmp_settings: Settings, tmp_path: Path) -> None:
    bare = serve_target(
        tmp_settings, write(tmp_path / "bare", manifest=manifest(source("customers"), model("a", [RAW])))
    )
    calls = [
        ("dbt_get_schema", {"model_name": "a", "source": "catalog"}),
        ("dbt_get_model_tests", {"model_name": "a"}),
        ("dbt_scan_pii_risk", {}),
    ]
    (ok_cat, cat), (ok_tests, tests), (ok_pii, pii) = call_tools(
        build_server(bare, only="dbt-artifacts"), calls
    )
    assert not ok_cat and cat["error"] == "catalog_not_found"
    assert ok_tests and tests["tests"] == [] and tests["total"] == 0
    assert ok_pii and pii["catalog_used"] is False
    empty = tmp_settings.model_copy(
        update={"store": tmp_settings.store.model_copy(update={"root": str(tmp_path / "e")})}
    )
    ok, payload = call_tool(
        build_server(empty, only="dbt-artifacts"),
        "dbt_get_lineage",
        {"node_id": "a", "direction": "upstream"},
    )
    assert not ok and payload["error"] == "asset_not_materialized" and "dbt_lineage_index" in payload["hint"]


def test_sources_json_v1_to_v3(tmp_settings: Settings, tmp_path: Path) -> None:
    for version in (1, 2, 3):
        sources = {
            "metadata": {"dbt_schema_version": schema_url("sources", version), "generated_at": "2026-01-01T00:00:00Z"},
            "results": [{"unique_id": RAW, "status": "error", "max_loaded_at": "2026-01-01T00:00:00Z",
                         "snapshotted_at": "2026-01-02T00:00:00Z", "criteria": {"error_after": {"count": 1, "period": "day"}}}],
        }  # fmt: skip
        folder = write(tmp_path / f"v{version}", manifest=manifest(source("customers")), sources=sources)
        settings = serve_target(tmp_settings, folder)
        ok, fresh = call_tool(build_server(settings, only="dbt-artifacts"), "dbt_get_source_freshness", {})
        assert ok and fresh["sources"][0]["age_seconds"] == 86400 and fresh["sources"][0]["status"] == "error"


def test_every_answer_is_described_by_its_output_schema(project: Settings) -> None:
    target = project.dbt_target_path
    loaded = {"max_loaded_at": "2026-01-03T00:00:00Z", "snapshotted_at": "2026-01-03T02:00:00Z"}
    sources = {
        "metadata": {"dbt_schema_version": schema_url("sources", 3), "generated_at": "2026-01-03T02:00:00Z"},
        "elapsed_time": 0.5,
        "results": [
            {"unique_id": RAW, "status": "warn", **loaded, "max_loaded_at_time_ago_in_s": 7200.0,
             "criteria": {"warn_after": {"count": 1, "period": "hour"}, "error_after": {}, "filter": None}},
            {"unique_id": f"source.{PROJECT}.raw.gone", "status": "runtime error", "error": "no such table",
             "criteria": {}},
        ],
    }  # fmt: skip
    write(target, sources=sources)
    assert_answers_match_their_schemas(
        build_server(project, only="dbt-artifacts"),
        [
            ("dbt_get_lineage", {"node_id": STG, "direction": "downstream"}),
            ("dbt_get_lineage", {"node_id": MART, "direction": "upstream", "depth": 1}),
            ("dbt_get_blast_radius", {"node_id": RAW}),
            ("dbt_get_model_tests", {"model_name": "stg_customers"}),
            ("dbt_get_failed_models", {}),
            ("dbt_get_failed_models", {"run_results_path": str(target / "run_results.json")}),
            ("dbt_detect_silent_skip", {"expected_patterns": ["stg_*", "dim_customers", MART]}),
            ("dbt_get_schema", {"model_name": "stg_customers", "source": "manifest"}),
            ("dbt_get_schema", {"model_name": "stg_customers", "source": "catalog"}),
            ("dbt_get_schema", {"model_name": "customers", "source": "catalog"}),
            ("dbt_scan_pii_risk", {}),
            (
                "dbt_scan_pii_risk",
                {"extra_patterns": ["full"], "manifest_path": str(target / "manifest.json")},
            ),
            ("dbt_find_select_star", {}),
            ("dbt_find_select_star", {"manifest_path": str(target / "manifest.json")}),
            ("dbt_get_column_lineage", {"node_id": "customers", "column_name": "email"}),
            ("dbt_get_source_freshness", {"sources_path": str(target / "sources.json")}),
        ],
    )
