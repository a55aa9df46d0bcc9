"""The answers of the health and row-count checks, built from a dashboard and its tile outcomes (shared by the
bi-api tools and the Dagster health asset, so both say the same thing)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from typing_extensions import TypedDict

from ade_platform.lib.bi.shapes import (
    DashboardInfo,
    DashboardStatus,
    ElementHealth,
    ElementInfo,
    TableRef,
    TileOutcome,
)
from ade_platform.lib.bi.tiles import dashboard_status, first_error


class DashboardHealth(TypedDict):
    dashboard_id: str
    title: str
    status: DashboardStatus
    error_detail: str | None
    element_count: int
    elements_with_errors: int
    empty_elements: int
    last_updated_at: str | None
    url: str | None
    elements: list[ElementHealth]


class TableCount(TypedDict):
    relation: str
    row_count: int | None
    error: str | None


class ElementRowCount(TypedDict):
    element_id: str
    title: str | None
    row_count: int | None
    meets_threshold: bool
    error: str | None
    elapsed_ms: float
    tables: list[str]
    warehouse_tables: list[TableCount] | None
    empty_cause: str | None


def health(dashboard: DashboardInfo, outcomes: Sequence[TileOutcome]) -> DashboardHealth:
    return DashboardHealth(
        dashboard_id=dashboard["id"],
        title=dashboard["title"],
        status=dashboard_status(outcomes),
        error_detail=first_error(outcomes),
        element_count=len(dashboard["elements"]),
        elements_with_errors=sum(o["status"] == "error" for o in outcomes),
        empty_elements=sum(o["status"] == "empty" for o in outcomes),
        last_updated_at=dashboard["last_updated_at"],
        url=dashboard["url"],
        elements=[ElementHealth(**o) for o in outcomes],  # type: ignore[typeddict-item]
    )


def empty_cause(outcome: TileOutcome, counts: Sequence[TableCount] | None) -> str | None:
    """Why a tile came back short, when the warehouse tells: its table is empty, or the table has rows and
    the tile's own filter or join drops them all."""
    if outcome["status"] != "empty" or not counts:
        return None
    if any(c["row_count"] == 0 for c in counts):
        return "source_table_empty"
    if all(c["row_count"] for c in counts):
        return "tile_query_filters_out_all_rows"
    return None


def row_counts(
    dashboard: DashboardInfo,
    outcomes: Sequence[TileOutcome],
    count_table: Callable[[TableRef], TableCount] | None,
) -> list[ElementRowCount]:
    """Per runnable tile: its row count and threshold verdict, and (with count_table) the rows of the tables
    behind it, each table counted once."""
    by_id: dict[str, ElementInfo] = {e["id"]: e for e in dashboard["elements"]}
    cache: dict[str, TableCount] = {}
    result = []
    for o in outcomes:
        element = by_id[o["element_id"]]
        relations = [t["relation"] for t in element["tables"]]
        counts = None
        if count_table is not None:
            for ref in element["tables"]:
                if ref["relation"] not in cache:
                    cache[ref["relation"]] = count_table(ref)
            counts = [cache[r] for r in relations]
        result.append(
            ElementRowCount(
                element_id=o["element_id"],
                title=o["title"],
                row_count=o["row_count"],
                meets_threshold=o["status"] == "ok",
                error=o["error"],
                elapsed_ms=o["elapsed_ms"],
                tables=relations,
                warehouse_tables=counts,
                empty_cause=empty_cause(o, counts),
            )
        )
    return result
