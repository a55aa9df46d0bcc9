"""The paging core (ade_platform/lib/paging.py): pages cover a list once, cursors are tied to their list."""

from __future__ import annotations

import pytest

from ade_platform.lib import paging
from ade_platform.lib.paging import PagingError, page


def _all_pages(items: list[int], limit: int, version: str = "v1", query: object = ("t",)) -> list[list[int]]:
    pages, cursor = [], None
    while True:
        p = page(items, limit, cursor, version=version, query=query)
        pages.append(p.items)
        if p.next_cursor is None:
            assert not p.truncated
            return pages
        assert p.truncated
        cursor = p.next_cursor


def test_pages_cover_every_item_once() -> None:
    items = list(range(23))
    pages = _all_pages(items, 5)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    assert [i for p in pages for i in p] == items


def test_default_and_cap_bound_the_page() -> None:
    items = list(range(5000))
    assert len(page(items, None, None, version="v", query=()).items) == paging.DEFAULT_LIMIT
    assert len(page(items, 900, None, version="v", query=(), cap=250).items) == 250
    assert len(page(items, 10_000, None, version="v", query=()).items) == paging.MAX_LIMIT


def test_total_is_the_whole_list_unless_unknown() -> None:
    assert page(list(range(7)), 2, None, version="v", query=()).fields()["total"] == 7
    assert "total" not in page(list(range(7)), 2, None, version="v", query=(), total=None).fields()


@pytest.mark.parametrize(
    ("version", "query", "why"),
    [("v2", ("t",), "list changed"), ("v1", ("t", "other filter"), "another query")],
)
def test_cursor_from_another_version_or_query_is_refused(version: str, query: object, why: str) -> None:
    first = page(list(range(10)), 3, None, version="v1", query=("t",))
    with pytest.raises(PagingError) as refused:
        page(list(range(10)), 3, first.next_cursor, version=version, query=query)
    assert refused.value.code == "invalid_cursor"
    assert why in refused.value.detail


@pytest.mark.parametrize("cursor", ["garbage", "e30", "WzEsImEiLCJiIiwtMV0"])
def test_a_cursor_this_tool_never_made_is_refused(cursor: str) -> None:
    with pytest.raises(PagingError) as refused:
        page([1, 2, 3], 1, cursor, version="v", query=())
    assert refused.value.code == "invalid_cursor"


def test_live_version_changes_with_the_items() -> None:
    assert paging.live_version([{"id": 1}], key=lambda r: r["id"]) != paging.live_version(
        [{"id": 1}, {"id": 2}], key=lambda r: r["id"]
    )


def test_name_matcher_is_a_case_insensitive_glob() -> None:
    match = paging.name_matcher("STG_*")
    assert match("stg_orders") and not match("fct_orders") and not match(None)
    exact = paging.name_matcher("orders")
    assert exact("Orders") and not exact("stg_orders")
    assert paging.name_matcher(None)("anything")


def test_state_matcher() -> None:
    assert paging.state_matcher("Failed")("failed")
    assert not paging.state_matcher(["success"])("failed")


def test_window_matcher() -> None:
    now = 1_800_000_000.0
    inside = paging.window_matcher("1d", "1h", now)
    assert inside(now - 7200) and not inside(now - 2 * 86400) and not inside(now - 60) and not inside(None)
    assert paging.window_matcher("2027-01-01", None, now)("2027-03-01T00:00:00Z")
    with pytest.raises(PagingError):
        paging.window_matcher("yesterday", None, now)
    with pytest.raises(PagingError):
        paging.window_matcher("1h", "1d", now)


def test_graph_pages_carry_every_edge_once() -> None:
    nodes = [
        {"node_id": n, "depth": d, "resource_type": "model"}
        for n, d in zip("abcdefg", [0, 1, 1, 2, 2, 2, 3], strict=True)
    ]
    edges = [{"from": a, "to": b} for a, b in ["ab", "ac", "bd", "be", "cf", "ce", "fg"]]
    seen_nodes, seen_edges, cursor = [], [], None
    while True:
        shown, here = paging.graph_page(nodes, edges, 2, cursor, version="v", query=("g",))
        seen_nodes += [n["node_id"] for n in shown.items]
        seen_edges += here
        if shown.next_cursor is None:
            break
        cursor = shown.next_cursor
    assert seen_nodes == list("abcdefg")
    assert sorted(map(str, seen_edges)) == sorted(map(str, edges))
    summary = paging.graph_summary(nodes, edges)
    assert summary["nodes_per_depth"] == {"0": 1, "1": 2, "2": 3, "3": 1}
    assert summary["nodes_per_kind"] == {"model": 7} and summary["total_edges"] == 7


def test_a_budget_ends_a_page_early_but_never_empty() -> None:
    items = [3, 3, 3, 10, 1]
    sizes, cursor = [], None
    while True:
        p = page(items, 10, cursor, version="v", query=(), budget=(lambda n: n, 7))
        sizes.append(p.items)
        if not p.next_cursor:
            break
        cursor = p.next_cursor
    assert sizes == [[3, 3], [3], [10], [1]]
