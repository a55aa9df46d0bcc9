"""Walking a paged tool through MCP: every page of a list, following next_cursor (docs/PAGING.md)."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from tests.helpers import call_tool


def all_pages(
    server: FastMCP, tool: str, args: dict[str, Any], key: str, limit: int, most_pages: int = 200
) -> list[dict[str, Any]]:
    """Every page of `tool`'s list under `key` at `limit` items a page: the answers, first to last."""
    pages: list[dict[str, Any]] = []
    cursor = None
    while len(pages) < most_pages:
        ok, answer = call_tool(
            server, tool, {**args, "limit": limit, **({"cursor": cursor} if cursor else {})}
        )
        assert ok, answer
        assert len(answer[key]) <= limit
        assert answer["truncated"] or answer["next_cursor"] is None, answer  # a next page means truncated
        pages.append(answer)
        cursor = answer["next_cursor"]
        if cursor is None:
            return pages
    raise AssertionError(f"{tool} did not end in {most_pages} pages")


def items(pages: list[dict[str, Any]], key: str) -> list[Any]:
    return [item for page in pages for item in page[key]]
