"""The lineage index, name lookup, traversal, blast radius and model tests (lib.dbt, no MCP)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ade_platform.lib.dbt.artifacts import ArtifactError, gc_paused, parse_artifact
from ade_platform.lib.dbt.lineage import blast_radius, build_lineage_index, graph_views, traverse
from ade_platform.lib.dbt.lookup import NodeLookup, UnresolvedNode
from ade_platform.lib.dbt.tests import model_tests
from tests.mcp.dbt_support import PROJECT, generic_test, manifest, model, schema_url, source

RAW = f"source.{PROJECT}.raw.orders"
STG = f"model.{PROJECT}.stg_orders"
MART = f"model.{PROJECT}.orders"


@pytest.fixture
def index() -> dict:
    nodes = [
        source("orders"),
        model("stg_orders", [RAW]),
        model("orders", [STG], materialized="table"),
        model("orders_report", [MART]),
        generic_test("not_null", STG, "order_id"),
        generic_test("accepted_values", STG, "status", severity="warn", values=["a", "b"]),
        generic_test(
            "relationships", MART, "order_id", also_on=[STG], to="ref('stg_orders')", field="order_id"
        ),
        {
            "unique_id": f"seed.{PROJECT}.countries",
            "resource_type": "seed",
            "name": "countries",
            "depends_on": {"nodes": []},
        },
        {
            "unique_id": f"test.{PROJECT}.assert_positive",
            "resource_type": "test",
            "name": "assert_positive",
            "depends_on": {"nodes": [MART]},
            "config": {"severity": "error", "where": "amount > 0"},
        },
    ]
    graph = manifest(*nodes)
    graph["exposures"] = {
        f"exposure.{PROJECT}.dash": {
            "resource_type": "exposure",
            "name": "dash",
            "type": "dashboard",
            "depends_on": {"nodes": [MART]},
            "owner": {"name": "BI"},
        }
    }
    return build_lineage_index(graph)


def test_traverse_includes_exposures_and_caps(index: dict) -> None:
    down = traverse(index, RAW, "downstream")
    assert [n["node_id"] for n in down["nodes"]][:2] == [RAW, STG]
    assert f"exposure.{PROJECT}.dash" in {n["node_id"] for n in down["nodes"]}
    assert not any(n["resource_type"] == "test" for n in down["nodes"])
    capped = traverse(index, RAW, "downstream", max_nodes=2)
    assert capped["truncated"] and capped["total_nodes"] == 2
    assert traverse(index, MART, "upstream", depth=1)["total_nodes"] == 2


def test_blast_radius_counts_tests_and_hops(index: dict) -> None:
    radius = blast_radius(index, RAW)
    by_id = {a["node_id"]: a for a in radius["affected"]}
    assert by_id[STG]["hops_from_source"] == 1 and by_id[STG]["has_downstream_dependents"]
    assert by_id[f"model.{PROJECT}.orders_report"]["has_downstream_dependents"] is False
    tests = [a for a in radius["affected"] if a["resource_type"] == "test"]
    assert len(tests) == 4 and all(t["materialization"] is None for t in tests)
    assert [a["hops_from_source"] for a in radius["affected"]] == sorted(
        a["hops_from_source"] for a in radius["affected"]
    )
    assert blast_radius(index, RAW, max_nodes=1)["truncated"]


def test_test_free_views_give_the_same_answers(index: dict) -> None:
    views = graph_views(index)
    for node in (RAW, STG, MART):
        for direction in ("upstream", "downstream"):
            for depth in (None, 1):
                assert traverse(index, node, direction, depth, views=views) == traverse(
                    index, node, direction, depth
                )
        assert blast_radius(index, node, views=views) == blast_radius(index, node)
    assert STG in views["has_dependents"] and f"model.{PROJECT}.orders_report" not in views["has_dependents"]


def test_model_tests_generic_singular_and_relationships(index: dict) -> None:
    tests = {t["test_type"]: t for t in model_tests(index, STG)}
    assert set(tests) == {"not_null", "accepted_values", "relationships"}
    assert tests["accepted_values"]["severity"] == "warn"
    assert tests["accepted_values"]["config"] == {"values": ["a", "b"]}
    assert tests["relationships"]["defined_on_other_node"] is True
    assert tests["relationships"]["config"] == {"to": "ref('stg_orders')", "field": "order_id"}
    mart_tests = {t["test_type"]: t for t in model_tests(index, MART)}
    assert mart_tests["singular"]["config"] == {"where": "amount > 0"}
    assert model_tests(index, f"model.{PROJECT}.orders_report") == []


def test_lookup_resolves_names_and_reports_ambiguity(index: dict) -> None:
    lookup = NodeLookup.build(index)
    assert lookup.resolve("stg_orders") == STG
    assert lookup.resolve("raw.orders") == RAW
    assert lookup.resolve("ORDERS") == MART  # the model wins over the source named orders
    assert lookup.resolve(RAW) == RAW
    with pytest.raises(UnresolvedNode) as missing:
        lookup.resolve("stg_ordrs")
    assert STG in missing.value.candidates and not missing.value.ambiguous
    with pytest.raises(UnresolvedNode):
        lookup.resolve("stg_orders", ("source",))
    twin = {
        **index,
        "nodes": {**index["nodes"], "model.other.stg_orders": {**index["nodes"][STG], "package": "other"}},
    }
    assert NodeLookup.build(twin).resolve("stg_orders") == STG  # the root project's model wins
    clash = {**twin, "project_name": "third"}
    with pytest.raises(UnresolvedNode) as ambiguous:
        NodeLookup.build(clash).resolve("stg_orders")
    assert ambiguous.value.ambiguous and len(ambiguous.value.candidates) == 2


def test_minimal_manifest_without_optional_fields() -> None:
    bare = {
        "metadata": {"dbt_schema_version": schema_url("manifest", 4)},
        "nodes": {"model.p.a": {"depends_on": {}}},
    }
    index = build_lineage_index(bare)
    assert index["nodes"]["model.p.a"]["resource_type"] == "model"
    assert traverse(index, "model.p.a", "upstream")["total_nodes"] == 1


@pytest.mark.parametrize(
    "kind,versions",
    [
        ("manifest", range(4, 13)),
        ("catalog", range(1, 2)),
        ("run-results", range(4, 7)),
        ("sources", range(1, 4)),
    ],
)
def test_supported_and_unsupported_versions(kind: str, versions: range) -> None:
    def raw(version: int) -> bytes:
        return json.dumps({"metadata": {"dbt_schema_version": schema_url(kind, version)}}).encode()

    for version in versions:
        assert parse_artifact(raw(version), kind)["metadata"]
    for version in (versions.start - 1, versions.stop, 99):
        with pytest.raises(ArtifactError) as err:
            parse_artifact(raw(version), kind)
        assert err.value.code == "unsupported_artifact_version" and f"v{version}" in err.value.detail


def test_wrong_kind_and_bad_json_are_structured() -> None:
    with pytest.raises(ArtifactError) as err:
        parse_artifact(json.dumps(manifest(model("a"))).encode(), "catalog")
    assert err.value.code == "unsupported_artifact_version"
    with pytest.raises(ArtifactError) as err:
        parse_artifact(b"{not json", "manifest")
    assert err.value.code == "artifact_unreadable"


def test_gc_paused_restores_the_collector() -> None:
    import gc

    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_corpus_index_matches_facts(corpus_set: tuple[Path, dict]) -> None:
    folder, facts = corpus_set
    index = build_lineage_index(json.loads((folder / "manifest.json").read_text()))
    uid = facts["chosen_model"]["unique_id"]
    assert index["project_name"] == facts["root_project_package"]
    assert index["parents"][uid] == facts["chosen_model"]["direct_parents"]
    non_test = [c for c in index["children"][uid] if not c.startswith("test.")]
    assert non_test == sorted(facts["chosen_model"]["direct_children_non_test"])
    assert len(index["tests_by_node"].get(uid, [])) == facts["chosen_model"]["tests_depending_on_model_count"]
    counts = facts["counts"]
    assert sum(1 for r in index["nodes"].values() if r["resource_type"] == "model") == counts["model"]
    assert sum(1 for r in index["nodes"].values() if r["resource_type"] == "source") == counts["source"]
