"""Every shared corpus set (dbt 1.0 to 1.12, manifest v4-v12), published and asked through MCP: the answers
must reproduce the set's facts.json (see ../shared/corpus/dbt-artifacts/SOURCES.md for the definitions)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tools
from tests.mcp.dbt_support import serve_target
from tests.mcp.paging_support import all_pages, items


@pytest.fixture
def corpus(corpus_set: tuple[Path, dict], tmp_settings: Settings) -> tuple[Settings, dict[str, Any]]:
    folder, facts = corpus_set
    return serve_target(tmp_settings, folder), facts


def _ids(payload: dict[str, Any], depth: int = 1) -> set[str]:
    return {n["node_id"] for n in payload["nodes"] if n["depth"] == depth}


def test_graph_answers_match_the_facts(corpus: tuple[Settings, dict[str, Any]]) -> None:
    settings, facts = corpus
    model = facts["chosen_model"]
    uid = model["unique_id"]
    src = facts["chosen_source"]
    calls = [
        ("dbt_get_lineage", {"node_id": uid, "direction": "upstream", "depth": 1}),
        ("dbt_get_lineage", {"node_id": uid, "direction": "downstream", "depth": 1}),
        ("dbt_get_blast_radius", {"node_id": uid}),
        ("dbt_get_model_tests", {"model_name": uid, "limit": 1000}),
        ("dbt_get_lineage", {"node_id": src["unique_id"], "direction": "downstream", "depth": 1}),
        ("dbt_get_lineage", {"node_id": uid, "direction": "upstream"}),
    ]
    answers = call_tools(build_server(settings, only="dbt-artifacts"), calls)
    assert all(ok for ok, _ in answers), [p for ok, p in answers if not ok]
    (_, up), (_, down), (_, blast), (_, tests), (_, src_down), (_, full_up) = answers

    assert _ids(up) == set(model["direct_parents"])
    assert _ids(down) == set(model["direct_children_non_test"])
    assert _ids(src_down) == set(src["direct_children_non_test"])
    assert up["provenance"]["asset"] == "dbt_lineage_index" and up["provenance"]["source"] == "cache"
    # the full upstream tree contains the direct parents, each once, and every edge joins two listed nodes
    listed = [n["node_id"] for n in full_up["nodes"]]
    assert len(listed) == len(set(listed)) and set(model["direct_parents"]) <= set(listed)
    assert all(e["from"] in set(listed) and e["to"] in set(listed) for e in full_up["edges"])

    hop1 = [a for a in blast["affected"] if a["hops_from_source"] == 1]
    assert not blast["truncated"] or len(blast["affected"]) == settings.limits.max_lineage_nodes
    if not blast["truncated"]:
        assert len(hop1) == model["direct_children_all_count"]
        assert {a["node_id"] for a in hop1 if a["resource_type"] != "test"} == set(
            model["direct_children_non_test"]
        )
    assert all(a["resource_type"] != "seed" for a in blast["affected"])

    test_ids = [t["test_id"] for t in tests["tests"]]
    assert len(test_ids) == model["tests_depending_on_model_count"] == tests["total"]
    if "tests_depending_on_model" in model:
        assert sorted(test_ids) == sorted(model["tests_depending_on_model"])
    if "tests_with_attached_node_count" in model:
        attached = [t for t in tests["tests"] if t["attached_node"] == uid]
        assert len(attached) == model["tests_with_attached_node_count"]
    assert all(t["severity"] in ("error", "warn") for t in tests["tests"])


def test_schema_run_results_and_freshness_match_the_facts(corpus: tuple[Settings, dict[str, Any]]) -> None:
    settings, facts = corpus
    uid = facts["chosen_model"]["unique_id"]
    present = facts["files_present"]
    calls = [
        ("dbt_get_schema", {"model_name": uid, "source": "catalog"}),
        ("dbt_get_schema", {"model_name": uid, "source": "manifest"}),
        ("dbt_get_failed_models", {}),
        ("dbt_get_source_freshness", {"limit": 1000}),
        ("dbt_detect_silent_skip", {"expected_patterns": ["*"]}),
    ]
    (ok_cat, cat), (ok_man, man), (ok_rr, rr), (ok_src, fresh), (ok_skip, skip) = call_tools(
        build_server(settings, only="dbt-artifacts"), calls
    )
    if present["catalog"]:
        assert ok_cat, cat
        if "catalog_columns_in_order" in facts["chosen_model"]:
            names = [c["column_name"] for c in cat["columns"]]
            assert names == facts["chosen_model"]["catalog_columns_in_order"]
            assert [c["index"] for c in cat["columns"]] == sorted(c["index"] for c in cat["columns"])
        assert cat["provenance"]["asset"] == "dbt_catalog"
    else:
        assert not ok_cat and cat["error"] == "catalog_not_found"
    assert ok_man, man
    if "manifest_documented_columns" in facts["chosen_model"]:
        assert sorted(c["column_name"] for c in man["columns"]) == sorted(
            facts["chosen_model"]["manifest_documented_columns"]
        )

    if present["run_results"]:
        expected = facts["run_results"]
        assert ok_rr, rr
        assert rr["count_by_status"] == expected["count_by_status"]
        assert rr["total_results"] == expected["results_count"]
        assert rr["results_not_in_manifest"] == expected["results_not_in_manifest_count"]
        assert rr["total_failed"] == sum(expected["count_by_status"].get(s, 0) for s in ("error", "fail"))
        assert rr["elapsed_seconds"] == pytest.approx(expected["elapsed_time"])
        assert ok_skip and len(skip["patterns"]) == 1
    else:
        assert not ok_rr and rr["error"] == "asset_not_materialized"
        assert "dbt_run_results" in rr["hint"]

    if present["sources"]:
        expected = facts["sources_json"]
        assert ok_src, fresh
        assert fresh["count_by_status"] == expected["count_by_status"]
        assert fresh["results_not_in_manifest"] == expected["results_not_in_manifest_count"]
        assert sorted(s["unique_id"] for s in fresh["sources"]) == sorted(expected["unique_ids"])
    else:
        assert not ok_src and fresh["error"] == "sources_not_found"


def test_scans_run_on_every_set(corpus: tuple[Settings, dict[str, Any]]) -> None:
    settings, facts = corpus
    uid = facts["chosen_model"]["unique_id"]
    calls = [
        ("dbt_scan_pii_risk", {}),
        ("dbt_find_select_star", {}),
        ("dbt_get_column_lineage", {"node_id": uid, "column_name": "__no_such_column__"}),
    ]
    (ok_pii, pii), (ok_star, star), (ok_col, col) = call_tools(
        build_server(settings, only="dbt-artifacts"), calls
    )
    assert ok_pii, pii
    # no public set tags PII (facts: columns_tagged_or_meta_pii_count == 0)
    assert sum(f["has_pii_tag"] for f in pii["findings"]) == facts["columns_tagged_or_meta_pii_count"] == 0
    assert pii["catalog_used"] == facts["files_present"]["catalog"]
    assert ok_star, star
    assert star["total"] <= facts["counts"]["model"]
    assert all(m["node_id"].startswith("model.") and m["occurrence_count"] >= 1 for m in star["models"])
    if ok_col:  # no column list known for the model: sqlglot is asked and says it cannot trace it
        assert col["resolved"] is False and col["reason"]
    else:
        assert col["error"] == "column_not_found"


def test_project_listing_matches_the_manifest(corpus: tuple[Settings, dict[str, Any]]) -> None:
    settings, facts = corpus
    # a real project listed page by page (docs/PAGING.md): every model once
    pages = all_pages(build_server(settings, only="dbt-project"), "fs_list_models", {}, "models", limit=40)
    listed = items(pages, "models")
    assert {p["total"] for p in pages} == {facts["counts"]["model"]}
    assert len({m["node_id"] for m in listed}) == len(listed)
    assert Counter(m["node_id"].split(".")[0] for m in listed) == {"model": facts["counts"]["model"]}
