"""run_results and sources.json: failures, skips and their cause, silent skips, freshness (lib.dbt.results)."""

from __future__ import annotations

import pytest

from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.dbt.lookup import NodeLookup
from ade_platform.lib.dbt.results import (
    PatternError,
    check_glob,
    detect_silent_skip,
    freshness_report,
    summarize_run_results,
)
from tests.mcp.dbt_support import PROJECT, generic_test, manifest, model, run_results, schema_url, source

RAW = f"source.{PROJECT}.raw.orders"
STG = f"model.{PROJECT}.stg_orders"
MID = f"model.{PROJECT}.int_orders"
MART = f"model.{PROJECT}.orders"
EPH = f"model.{PROJECT}.stg_ephemeral"


@pytest.fixture
def index() -> dict:
    return build_lineage_index(
        manifest(
            source("orders"),
            model("stg_orders", [RAW]),
            model("stg_payments", [RAW]),
            model("stg_ephemeral", [RAW], materialized="ephemeral"),
            model("int_orders", [STG]),
            model("orders", [MID]),
            generic_test("not_null", STG, "id"),
        )
    )


def test_failures_skips_with_their_cause_and_totals(index: dict) -> None:
    test_id = f"test.{PROJECT}.not_null_stg_orders_id.abc"
    rr = run_results(
        {STG: "error", MID: "skipped", MART: "skipped", test_id: "warn", f"model.{PROJECT}.stg_payments": "success",
         "model.elsewhere.ghost": "success"},
        messages={STG: 'column "x" does not exist'},
    )  # fmt: skip
    summary = summarize_run_results(rr, index)
    assert [f["node_id"] for f in summary["failed"]] == [STG]
    assert summary["failed"][0]["error_message"] == 'column "x" does not exist'
    assert summary["failed"][0]["started_at"] == "2026-01-03T00:00:01Z"
    skipped = {s["node_id"]: s for s in summary["skipped"]}
    assert skipped[MID]["upstream_failure"] == STG and skipped[MART]["upstream_failure"] == STG
    assert skipped[MID]["error_message"] is None
    assert [w["name"] for w in summary["warnings"]] == ["not_null_stg_orders_id"]
    assert (summary["total_failed"], summary["total_skipped"], summary["total_passed"]) == (1, 2, 2)
    assert summary["results_not_in_manifest"] == 1
    assert summary["run_id"] == "inv-1" and summary["command"] == "build"
    assert summary["run_started_at"] == "2026-01-03T00:00:01Z"


def test_success_without_a_manifest() -> None:
    summary = summarize_run_results(run_results({STG: "success", f"test.{PROJECT}.t.x": "pass"}), None)
    assert summary["failed"] == [] and summary["skipped"] == [] and summary["total_failed"] == 0
    assert summary["total_passed"] == 2 and summary["results_not_in_manifest"] is None


def test_skip_without_a_failed_ancestor(index: dict) -> None:
    summary = summarize_run_results(run_results({MART: "skipped"}), index)
    assert summary["skipped"][0]["upstream_failure"] is None


@pytest.mark.parametrize("pattern", ["", "  ", "stg_[", "stg_]", "[z-a]*", "stg orders", "a;b"])
def test_bad_globs(pattern: str) -> None:
    with pytest.raises(PatternError):
        check_glob(pattern)


@pytest.mark.parametrize(
    "pattern", ["stg_*", "fct_orders", "model.shop.revenue", "stg_[a-z]*", "[!x]*", "?nt_*"]
)
def test_good_globs(pattern: str) -> None:
    assert check_glob(pattern) == pattern


def test_silent_skip(index: dict) -> None:
    lookup = NodeLookup.build(index)
    ran = {STG, MART}
    found = detect_silent_skip(
        ran, index, lookup.models, lookup.by_key, ["stg_*", "orders", "nope", f"model.{PROJECT}.int_*"]
    )
    by = {p["pattern"]: p for p in found}
    # the ephemeral model is never in run results, so it is not expected
    assert by["stg_*"]["expected_match_count"] == 2 and by["stg_*"]["missing_models"] == ["stg_payments"]
    assert by["stg_*"]["severity"] == "warning"
    assert by["orders"]["severity"] == "ok" and by["orders"]["actual_match_count"] == 1
    # A name that matches nothing reads as the spec's example: a warning naming it, with the reason kept.
    assert (by["nope"]["severity"], by["nope"]["missing_models"], by["nope"]["reason"]) == (
        "warning",
        ["nope"],
        "no_match",
    )
    assert by["stg_*"]["reason"] == "not_in_run_results" and by["orders"]["reason"] is None
    assert by[f"model.{PROJECT}.int_*"]["missing_models"] == [MID]


def test_freshness_report(index: dict) -> None:
    sources = {
        "metadata": {"dbt_schema_version": schema_url("sources", 3), "generated_at": "2026-01-01T06:00:00Z"},
        "elapsed_time": 1.0,
        "results": [
            {"unique_id": RAW, "status": "warn", "max_loaded_at": "2026-01-01T01:00:00Z",
             "snapshotted_at": "2026-01-01T06:00:00Z",
             "criteria": {"warn_after": {"count": 2, "period": "hour"}, "error_after": {"count": 1, "period": "day"},
                          "filter": None}},
            {"unique_id": f"source.{PROJECT}.raw.gone", "status": "runtime error", "error": "relation does not exist"},
            {"unique_id": f"source.{PROJECT}.raw.fine", "status": "pass", "max_loaded_at_time_ago_in_s": 60.5,
             "criteria": {"warn_after": {"count": None, "period": None}}},
        ],
    }  # fmt: skip
    report = freshness_report(sources, index)
    rows = {r["unique_id"]: r for r in report["sources"]}
    warn = rows[RAW]
    assert (warn["source_name"], warn["table_name"]) == ("raw", "orders")
    assert (
        warn["age_seconds"] == 18000
        and warn["warn_after_seconds"] == 7200
        and warn["error_after_seconds"] == 86400
    )
    assert rows[f"source.{PROJECT}.raw.gone"]["error_message"] == "relation does not exist"
    assert rows[f"source.{PROJECT}.raw.fine"]["age_seconds"] == 60.5
    assert rows[f"source.{PROJECT}.raw.fine"]["warn_after_seconds"] is None
    assert [r["status"] for r in report["sources"]] == ["runtime error", "warn", "pass"]
    assert report["count_by_status"] == {"pass": 1, "runtime error": 1, "warn": 1}
    assert report["results_not_in_manifest"] == 2 and warn["in_manifest"] is True
