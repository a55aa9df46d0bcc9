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

# The paging and filter parameters are described once, in the instructions the gateway (and a toolset served
# alone) sends at initialize (PARAMETERS), not again in the input schema of each of the ~25 list tools.
PARAMETERS = (
    f"Paged list tools (docs/PAGING.md): limit: items per page (default {DEFAULT_LIMIT}, at most {MAX_LIMIT}; "
    "graph tools: nodes, default limits.max_lineage_nodes, with the edges reaching them); cursor: the last "
    "answer's next_cursor, other arguments unchanged (truncated: true means more follow); name_pattern: "
    "case-insensitive glob on the name (stg_*, *orders*; no wildcard: the whole name); since / until: an "
    "ISO-8601 time or a span back from now (90m, 24h, 7d)."
)
Limit = Annotated[int | None, Field(ge=1, le=MAX_LIMIT)]
GraphLimit = Annotated[int | None, Field(ge=1, le=MAX_LIMIT)]
Cursor = Annotated[str | None, Field(min_length=1, max_length=512)]
NamePattern = Annotated[str | None, Field(min_length=1, max_length=256)]
Since = Annotated[str | None, Field(min_length=2, max_length=40)]
Until = Annotated[str | None, Field(min_length=2, max_length=40)]
# graph tools: full (nodes and edges) or summary (only counts per depth and kind); their descriptions say so
Detail = Literal["full", "summary"]


class Paged(OpenShape):
    """The contract's answer fields, inherited by every paged answer shape."""

    # described once, in PARAMETERS: every paged tool's output schema repeats these two fields
    next_cursor: str | None
    truncated: bool


class GraphSummary(OpenShape):
    """A graph's size before its nodes: how many nodes per hop distance and per kind."""

    nodes_per_depth: dict[str, int]
    nodes_per_kind: dict[str, int]
    total_nodes: int
    total_edges: int
