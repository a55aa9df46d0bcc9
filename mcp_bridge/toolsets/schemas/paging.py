"""The paging and filtering contract's parameter and answer types (docs/PAGING.md), shared by every list tool.

A list tool takes `limit` and `cursor` (and the filters its source supports, under these names) and its answer
shape inherits `Paged` (`next_cursor`, `truncated`); `total` stays the tool's own field, required where the
count is always known.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ade_platform.lib.paging import DEFAULT_LIMIT, MAX_LIMIT
from ade_platform.lib.shapes import OpenShape

Limit = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_LIMIT,
        description=f"Items per page (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}; docs/PAGING.md).",
    ),
]
GraphLimit = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_LIMIT,
        description="Nodes per page (default: the server's node limit, limits.max_lineage_nodes, 500; at most "
        f"{MAX_LIMIT}; docs/PAGING.md). Each page carries the edges whose farther end is on it.",
    ),
]
Cursor = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=512,
        description="next_cursor of the previous page, unchanged, with the same other arguments; omit for the "
        "first page.",
    ),
]
NamePattern = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=256,
        description="Only items whose name matches this case-insensitive glob (stg_*, *orders*); without "
        "wildcards, the whole name.",
    ),
]
Since = Annotated[
    str | None,
    Field(
        min_length=2,
        max_length=40,
        description="Only items at or after this moment: an ISO-8601 time (2026-11-24T14:00:00Z) or a span "
        "back from now (90m, 24h, 7d).",
    ),
]
Until = Annotated[
    str | None,
    Field(
        min_length=2,
        max_length=40,
        description="Only items before this moment (ISO-8601 time or a span back from now, like since).",
    ),
]
Detail = Annotated[
    Literal["full", "summary"],
    Field(
        description="full: the graph (nodes and edges); summary: only counts per depth and per kind, to size "
        "the graph before asking for it."
    ),
]


class Paged(OpenShape):
    """The contract's answer fields, inherited by every paged answer shape."""

    next_cursor: Annotated[
        str | None, Field(description="Pass as cursor for the next page; null on the last page.")
    ]
    truncated: Annotated[bool, Field(description="True when more items follow (next_cursor is set).")]


class GraphSummary(OpenShape):
    """A graph's size before its nodes: how many nodes per hop distance and per kind."""

    nodes_per_depth: dict[str, int]
    nodes_per_kind: dict[str, int]
    total_nodes: int
    total_edges: int
