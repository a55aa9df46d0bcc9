"""dbt-artifacts through MCP against the materialized demo (dbt_demo built by Dagster into a temp ADE_HOME)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import Settings
from ade_platform.lib.dbt.publish import publish_artifact
from ade_platform.store import StoreReader, StoreWriter
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import call_tools

pytestmark = pytest.mark.integration

P = "dbt_demo"
STG_ORDERS = f"model.{P}.stg_orders"
EXPOSURE = f"exposure.{P}.customer_revenue_dashboard"


@pytest.fixture(scope="module")
def answers(demo_settings: Settings) -> dict[str, tuple[bool, Any]]:
    calls = {
        "down": ("dbt_get_lineage", {"node_id": STG_ORDERS, "direction": "downstream"}),
        "down1": ("dbt_get_lineage", {"node_id": "stg_orders", "direction": "downstream", "depth": 1}),
        "blast": ("dbt_get_blast_radius", {"node_id": f"source.{P}.raw.orders"}),
        "tests": ("dbt_get_model_tests", {"model_name": "stg_orders"}),
        "failed": ("dbt_get_failed_models", {}),
        "skip": (
            "dbt_detect_silent_skip",
            {"expected_patterns": ["stg_*", "fct_payments_daily", "customers"]},
        ),
        "catalog": ("dbt_get_schema", {"model_name": "fct_payments_daily", "source": "catalog"}),
        "declared": ("dbt_get_schema", {"model_name": "stg_customers", "source": "manifest"}),
        "pii": ("dbt_scan_pii_risk", {}),
        "fresh": ("dbt_get_source_freshness", {}),
        "star": ("dbt_find_select_star", {}),
        "col_ltv": ("dbt_get_column_lineage", {"node_id": "customers", "column_name": "lifetime_value"}),
        "col_fin": ("dbt_get_column_lineage", {"node_id": "finance_orders", "column_name": "total_paid"}),
        "col_stg": ("dbt_get_column_lineage", {"node_id": STG_ORDERS, "column_name": "order_id"}),
    }
    # through the gateway (every toolset mounted), as an agent host would call them
    results = call_tools(build_server(demo_settings), list(calls.values()))
    return dict(zip(calls, results, strict=True))


def _ok(answers: dict[str, tuple[bool, Any]], key: str) -> Any:
    ok, payload = answers[key]
    assert ok, payload
    return payload


def test_lineage_includes_the_exposure(answers: dict[str, tuple[bool, Any]]) -> None:
    down = _ok(answers, "down")
    ids = {n["node_id"] for n in down["nodes"]}
    assert EXPOSURE in ids and f"model.{P}.finance_orders" in ids and not down["truncated"]
    depth1 = {n["node_id"] for n in _ok(answers, "down1")["nodes"] if n["depth"] == 1}
    assert depth1 == {f"model.{P}.orders", f"model.{P}.fct_payments_daily"}
    incremental = next(n for n in down["nodes"] if n["name"] == "fct_payments_daily")
    assert incremental["materialization"] == "incremental"
    prov = down["provenance"]
    assert prov["asset"] == "dbt_lineage_index" and prov["source"] == "cache" and prov["run_id"]


def test_blast_radius_and_tests(answers: dict[str, tuple[bool, Any]]) -> None:
    blast = {a["name"]: a for a in _ok(answers, "blast")["affected"]}
    assert blast["stg_orders"]["hops_from_source"] == 1 and blast["stg_orders"]["has_downstream_dependents"]
    assert blast["fct_payments_daily"]["has_downstream_dependents"] is False  # only tests depend on it
    assert blast["customer_revenue_dashboard"]["resource_type"] == "exposure"
    assert any(a["resource_type"] == "test" for a in blast.values())
    tests = {t["test_type"] + ":" + (t["column_name"] or ""): t for t in _ok(answers, "tests")["tests"]}
    warn = tests["accepted_values:status"]
    assert warn["severity"] == "warn" and "lost" not in warn["config"]["values"]
    assert tests["relationships:customer_id"]["config"]["field"] == "customer_id"
    # the relationships test defined on stg_payments points at stg_orders too
    assert tests["relationships:order_id"]["defined_on_other_node"]
    assert sum(t["severity"] == "warn" for t in tests.values()) == 1


def test_run_results_and_silent_skips(answers: dict[str, tuple[bool, Any]]) -> None:
    failed = _ok(answers, "failed")
    assert failed["failed"] == [] and failed["skipped"] == [] and failed["total_failed"] == 0
    assert len(failed["warnings"]) == 1
    assert failed["warnings"][0]["name"].startswith("accepted_values_stg_orders_status")
    assert failed["total_passed"] > 20 and failed["provenance"]["asset"] == "dbt_run_results"
    skip = _ok(answers, "skip")
    assert skip["all_satisfied"] and [p["severity"] for p in skip["patterns"]] == ["ok", "ok", "ok"]
    assert skip["patterns"][0]["expected_match_count"] == 3


def test_schema_pii_and_freshness(answers: dict[str, tuple[bool, Any]]) -> None:
    catalog = _ok(answers, "catalog")
    assert [c["column_name"] for c in catalog["columns"]] == [
        "order_date", "payment_method", "payment_count", "amount", "last_loaded_at"
    ]  # fmt: skip
    assert catalog["provenance"]["asset"] == "dbt_catalog" and catalog["in_catalog"]
    declared = {c["column_name"]: c for c in _ok(answers, "declared")["columns"]}
    assert declared["email"]["tags"] == ["pii"] and declared["phone"]["tags"] == []
    pii = {(f["model_name"], f["column_name"]): f for f in _ok(answers, "pii")["findings"]}
    assert (
        pii[("stg_customers", "email")]["has_pii_tag"]
        and pii[("stg_customers", "email")]["risk_level"] == "high"
    )
    for column in ("full_name", "phone", "date_of_birth", "address"):
        assert not pii[("stg_customers", column)]["has_pii_tag"], column
    assert pii[("stg_payments", "card_last_four")]["pii_pattern_matched"] == "payment_card"
    assert sum(f["has_pii_tag"] for f in pii.values()) == 1
    fresh = {s["table_name"]: s["status"] for s in _ok(answers, "fresh")["sources"]}
    assert fresh == {"customers": "pass", "orders": "warn", "payments": "error"}


def test_select_star_and_column_lineage(answers: dict[str, tuple[bool, Any]]) -> None:
    star = {m["model_name"]: m for m in _ok(answers, "star")["models"]}
    assert (
        star["finance_orders"]["propagates_upstream_columns"] and star["finance_orders"]["final_select_star"]
    )
    assert not star["stg_orders"]["propagates_upstream_columns"]
    assert any(o["scope"] == "cte" for o in star["stg_orders"]["occurrences"])
    ltv = _ok(answers, "col_ltv")
    assert ltv["resolved"]
    assert {(u["name"], u["column_name"]) for u in ltv["upstream"]} == {
        ("orders", "status"),
        ("orders", "total_paid"),
    }
    fin = _ok(answers, "col_fin")
    assert fin["resolved"] and [
        (u["name"], u["column_name"], u["transformation"]) for u in fin["upstream"]
    ] == [("orders", "total_paid", "direct")]
    stg = _ok(answers, "col_stg")
    assert [(u["node_id"], u["column_name"]) for u in stg["upstream"]] == [(f"source.{P}.raw.orders", "id")]


def test_select_star_answers_from_its_asset_only_while_it_is_current(
    answers: dict[str, tuple[bool, Any]], demo_settings: Settings, tmp_path: Path
) -> None:
    stored = _ok(answers, "star")
    assert "dbt_select_star" in {i["asset"] for i in stored["provenance"].get("inputs", [])}
    # A copy of the demo home where dbt parsed again (a new manifest version): the stored scan no longer
    # describes the manifest, so the tool scans on demand, and finds the same models.
    home = tmp_path / "ade"
    shutil.copytree(demo_settings.home, home, ignore=shutil.ignore_patterns("dagster"))
    settings = settings_for(home)
    server = build_server(settings)
    ((ok, copied),) = call_tools(server, [("dbt_find_select_star", {})])
    assert ok and "dbt_select_star" in {i["asset"] for i in copied["provenance"]["inputs"]}
    # When the stored manifest lacks compiled SQL (a `dbt parse`), the scan borrowed the last build's, and a new
    # build makes the stored scan stale too. When the manifest is the build's own (the build step publishes the
    # manifest it ran with), the scan never read the last build, so touching it changes nothing.
    borrowed = (
        StoreReader(settings.store_root).latest("dbt_select_star").provenance.source["needs_last_build"]
    )
    last_build = home / "dbt" / "last_build" / "manifest.json"
    os.utime(last_build, ns=(last_build.stat().st_atime_ns, last_build.stat().st_mtime_ns + 10**9))
    ((ok, rebuilt),) = call_tools(server, [("dbt_find_select_star", {})])
    from_asset = "dbt_select_star" in {i["asset"] for i in rebuilt["provenance"].get("inputs", [])}
    assert ok and from_asset is not borrowed
    assert rebuilt["models"] == stored["models"]
    reparsed = tmp_path / "manifest.json"
    reparsed.write_bytes(StoreReader(settings.store_root).latest("dbt_manifest").file("data.json"))
    publish_artifact(StoreWriter(settings.store_root), "manifest", reparsed)
    ((ok, fresh),) = call_tools(build_server(settings), [("dbt_find_select_star", {})])
    assert ok, fresh
    assert "dbt_select_star" not in {i["asset"] for i in fresh["provenance"].get("inputs", [])}
    assert fresh["models"] == stored["models"] and fresh["total"] == stored["total"]
