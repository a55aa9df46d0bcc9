"""The paging contract through MCP on a generated dbt project (docs/PAGING.md): pages cover a list once, a
cursor from another tool, filter or snapshot is refused with invalid_cursor, filters narrow the list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tool
from tests.mcp.dbt_support import (
    PROJECT,
    generic_test,
    manifest,
    model,
    run_results,
    serve_target,
    source,
    write,
)
from tests.mcp.paging_support import all_pages, items

RAW = f"source.{PROJECT}.raw.orders"
WIDTH = 10


def _project(extra_models: int = 0) -> dict[str, Any]:
    """A source feeding stg_i -> int_i -> fct_i (fct_i also reads int_{i+1}), plus `extra_models` loose
    models, and a not_null test on every fct model."""
    nodes: list[dict[str, Any]] = [source("orders")]
    for i in range(WIDTH):
        nodes.append(model(f"stg_{i}", [RAW]))
        nodes.append(model(f"int_{i}", [f"model.{PROJECT}.stg_{i}"], tags=["finance"] if i % 2 else []))
    for i in range(WIDTH):
        deps = [f"model.{PROJECT}.int_{i}", f"model.{PROJECT}.int_{(i + 1) % WIDTH}"]
        nodes.append(model(f"fct_{i}", deps, materialized="table"))
        nodes.append(generic_test("not_null", f"model.{PROJECT}.fct_{i}", "id"))
    nodes += [model(f"loose_{i}", []) for i in range(extra_models)]
    graph = manifest(*nodes)
    statuses = {f"model.{PROJECT}.stg_{i}": "error" for i in range(WIDTH)}
    statuses |= {f"model.{PROJECT}.int_{i}": "skipped" for i in range(WIDTH)}
    return {"manifest": graph, "run_results": run_results(statuses)}


@pytest.fixture
def project(tmp_settings: Settings, tmp_path: Path) -> Settings:
    return serve_target(tmp_settings, write(tmp_path / "target", **_project()), project=tmp_path)


def test_pages_cover_the_models_once_and_filters_narrow_them(project: Settings) -> None:
    server = build_server(project, only="dbt-project")
    pages = all_pages(server, "fs_list_models", {}, "models", limit=7)
    names = [m["model_name"] for m in items(pages, "models")]
    assert len(pages) == 5 and len(names) == 3 * WIDTH == len(set(names))
    assert {p["total"] for p in pages} == {3 * WIDTH}
    stg = all_pages(server, "fs_list_models", {"name_pattern": "STG_*"}, "models", limit=3)
    assert sorted(m["model_name"] for m in items(stg, "models")) == sorted(f"stg_{i}" for i in range(WIDTH))
    assert len(stg) == 4 and stg[0]["total"] == WIDTH
    finance = items(
        all_pages(server, "fs_list_models", {"tag": "finance", "name_pattern": "int_*"}, "models", 2),
        "models",
    )
    assert sorted(m["model_name"] for m in finance) == [f"int_{i}" for i in range(1, WIDTH, 2)]


def test_lineage_pages_carry_every_node_and_edge_once_and_the_summary_counts_them(project: Settings) -> None:
    server = build_server(project, only="dbt-artifacts")
    args = {"node_id": RAW, "direction": "downstream"}
    ok, whole = call_tool(server, "dbt_get_lineage", args)
    assert ok and not whole["truncated"] and whole["next_cursor"] is None, whole
    pages = all_pages(server, "dbt_get_lineage", args, "nodes", limit=4)
    assert len(pages) > 2
    nodes = [n["node_id"] for n in items(pages, "nodes")]
    edges = [(e["from"], e["to"]) for e in items(pages, "edges")]
    assert nodes == [n["node_id"] for n in whole["nodes"]] and len(nodes) == len(set(nodes)) == 1 + 3 * WIDTH
    assert sorted(edges) == sorted((e["from"], e["to"]) for e in whole["edges"]) and len(edges) == len(
        set(edges)
    )
    ok, summary = call_tool(server, "dbt_get_lineage", {**args, "detail": "summary"})
    assert ok and summary["nodes"] == [] and summary["edges"] == [], summary
    assert summary["summary"]["nodes_per_depth"] == {"0": 1, "1": WIDTH, "2": WIDTH, "3": WIDTH}
    assert summary["summary"]["nodes_per_kind"] == {"source": 1, "model": 3 * WIDTH}
    assert summary["summary"]["total_edges"] == len(edges) and summary["total_nodes"] == 1 + 3 * WIDTH


def test_lists_paged_together_and_state_filters(project: Settings) -> None:
    server = build_server(project, only="dbt-artifacts")
    pages = all_pages(server, "dbt_get_failed_models", {}, "failed", limit=3)
    assert len(pages) == 4
    failed = [f["node_id"] for f in items(pages, "failed")]
    skipped = [s["node_id"] for s in items(pages, "skipped")]
    assert len(failed) == len(set(failed)) == WIDTH and len(skipped) == len(set(skipped)) == WIDTH
    affected = items(
        all_pages(server, "dbt_get_blast_radius", {"node_id": RAW}, "affected", limit=6), "affected"
    )
    assert (
        len({a["node_id"] for a in affected}) == len(affected) == 3 * WIDTH + WIDTH
    )  # models and their tests


def test_a_foreign_cursor_is_refused(project: Settings) -> None:
    servers = {
        "fs": build_server(project, only="dbt-project"),
        "dbt": build_server(project, only="dbt-artifacts"),
    }
    ok, first = call_tool(servers["fs"], "fs_list_models", {"limit": 5})
    assert ok and first["next_cursor"], first
    cursor = first["next_cursor"]
    for tool, args in [
        ("fs_list_models", {"name_pattern": "stg_*"}),  # the same tool, another filter
        ("dbt_get_blast_radius", {"node_id": RAW}),  # another tool
        ("fs_list_models", {"tag": "finance"}),
    ]:
        ok, refused = call_tool(servers[tool[:3].rstrip("_")], tool, {**args, "cursor": cursor})
        assert not ok and refused["error"] == "invalid_cursor", (tool, refused)
        assert "another query" in refused["detail"] and refused["hint"], refused
    ok, refused = call_tool(servers["fs"], "fs_list_models", {"cursor": "bm90LWEtY3Vyc29y"})
    assert not ok and refused["error"] == "invalid_cursor", refused


def test_a_cursor_from_an_older_snapshot_is_refused(project: Settings, tmp_path: Path) -> None:
    server = build_server(project, only="dbt-project")
    ok, first = call_tool(server, "fs_list_models", {"limit": 5})
    assert ok and first["next_cursor"], first
    ok, second = call_tool(server, "fs_list_models", {"limit": 5, "cursor": first["next_cursor"]})
    assert ok, second  # the same snapshot: the cursor holds
    # dbt runs again with two more models: a new manifest version in the same store
    newer = serve_target(project, write(tmp_path / "target", **_project(extra_models=2)), project=tmp_path)
    ok, refused = call_tool(
        build_server(newer, only="dbt-project"),
        "fs_list_models",
        {"limit": 5, "cursor": first["next_cursor"]},
    )
    assert not ok and refused["error"] == "invalid_cursor", refused
    assert "changed" in refused["detail"] and "without cursor" in refused["hint"], refused
    ok, fresh = call_tool(build_server(newer, only="dbt-project"), "fs_list_models", {"limit": 5})
    assert ok and fresh["total"] == 3 * WIDTH + 2, fresh
