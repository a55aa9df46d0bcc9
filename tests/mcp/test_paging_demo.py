"""The paging contract through MCP on the materialized demo (docs/PAGING.md): lists of every kind of source
(store snapshots, project files, the SaaS emulators) paged at a third of their length (one item a page for the two-dashboard BI demo) come back whole, each item
once and in order; a cursor is refused by another tool; filters narrow the list and its total."""

from __future__ import annotations

from typing import Any

import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tool
from tests.mcp.paging_support import all_pages, items

pytestmark = pytest.mark.integration

# tool, arguments, list key, what identifies an item
LISTS: list[tuple[str, dict[str, Any], str, str]] = [
    ("fs_list_models", {}, "models", "model_name"),
    ("dbt_scan_pii_risk", {}, "findings", "column_name"),
    ("dbt_get_source_freshness", {}, "sources", "unique_id"),
    ("warehouse_get_schema", {"schema_name": "main"}, "tables", "table_name"),
    ("dbtcloud_list_jobs", {"project_id": 7101}, "jobs", "job_id"),
    ("bi_list_dashboards", {"tool": "looker"}, "dashboards", "dashboard_id"),
    ("bi_list_dashboards", {"tool": "metabase"}, "dashboards", "dashboard_id"),
    ("bi_get_dashboard_elements", {"tool": "looker", "dashboard_id": "1"}, "elements", "element_id"),
]


@pytest.fixture(scope="module")
def server(demo_settings: Settings) -> Any:
    return build_server(demo_settings)


def _key(item: dict[str, Any], field: str) -> Any:
    return (item.get("node_id"), item[field]) if field == "column_name" else item[field]


@pytest.mark.parametrize(("tool", "args", "key", "field"), LISTS, ids=[f"{t}-{a}" for t, a, _, _ in LISTS])
def test_a_list_paged_in_thirds_comes_back_whole(
    server: Any, tool: str, args: dict[str, Any], key: str, field: str
) -> None:
    ok, whole = call_tool(server, tool, {**args, "limit": 1000})
    assert ok and whole["next_cursor"] is None, whole
    expected = [_key(i, field) for i in whole[key]]
    assert len(expected) >= 2, f"the demo's {tool} lists {len(expected)} items: nothing to page"
    limit = max(1, len(expected) // 3)
    pages = all_pages(server, tool, args, key, limit)
    assert len(pages) >= min(3, len(expected))
    assert [_key(i, field) for i in items(pages, key)] == expected
    assert {p.get("total", len(expected)) for p in pages} == {whole.get("total", len(expected))}


def test_lists_of_the_demo_are_long_enough_to_page(server: Any) -> None:
    ok, models = call_tool(server, "fs_list_models", {"limit": 2})
    assert ok and models["total"] > 6 and models["truncated"] and models["next_cursor"], models


def test_a_cursor_of_one_tool_is_refused_by_another(server: Any) -> None:
    ok, jobs = call_tool(server, "fs_list_models", {"limit": 1})
    assert ok and jobs["next_cursor"], jobs
    for tool, args in [
        ("bi_list_dashboards", {"tool": "looker"}),
        ("warehouse_get_schema", {"schema_name": "main"}),
        ("dbt_scan_pii_risk", {}),
    ]:
        ok, refused = call_tool(server, tool, {**args, "cursor": jobs["next_cursor"]})
        assert not ok and refused["error"] == "invalid_cursor", (tool, refused)


def test_filters_narrow_the_list_and_its_total(server: Any) -> None:
    ok, staging = call_tool(server, "fs_list_models", {"name_pattern": "stg_*"})
    ok_all, everything = call_tool(server, "fs_list_models", {"limit": 1000})
    assert ok and ok_all, (staging, everything)
    names = {m["model_name"] for m in staging["models"]}
    assert names and all(n.startswith("stg_") for n in names)
    assert names == {m["model_name"] for m in everything["models"] if m["model_name"].startswith("stg_")}
    assert staging["total"] == len(names) < everything["total"]
    ok, boards = call_tool(server, "bi_list_dashboards", {"tool": "looker", "limit": 1000})
    assert ok and boards["dashboards"], boards
    title = boards["dashboards"][0]["title"]
    ok, one = call_tool(server, "bi_list_dashboards", {"tool": "looker", "name_pattern": title})
    assert ok and [d["title"] for d in one["dashboards"]] == [title] * one["total"], one
    ok, future = call_tool(server, "bi_list_dashboards", {"tool": "looker", "since": "2999-01-01T00:00:00Z"})
    assert ok and future["dashboards"] == [] and future["total"] == 0, future
    ok, passing = call_tool(server, "dbt_get_source_freshness", {"state": "pass", "limit": 1000})
    assert ok and all(s["status"] == "pass" for s in passing["sources"]), passing
    ok, bad = call_tool(server, "bi_list_dashboards", {"tool": "looker", "since": "last tuesday"})
    assert not ok and bad["error"] == "invalid_argument", bad
