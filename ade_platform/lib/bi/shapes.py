"""The shapes shared by the BI clients, the Dagster assets and the bi-api tools (docs/STORE_ASSETS.md, "BI").

Every BI tool is mapped onto the same few shapes; fields one tool does not have are null (Looker has models
and explores, Metabase has questions and databases).
"""

from __future__ import annotations

from typing import Any, Literal

from typing_extensions import TypedDict

from ade_platform.lib.shapes import OpenShape

TileStatus = Literal["ok", "error", "empty", "unknown"]
DashboardStatus = Literal["ok", "error", "unknown"]


class TableRef(OpenShape):
    relation: str  # database.schema.name as the warehouse names it, unquoted
    database: str | None
    schema: str | None
    name: str
    how: Literal["sql_parse", "explore_sql_table_name", "source_table"]


class AppliedFilter(OpenShape):
    name: str  # the filter's name on the dashboard
    value: Any  # its default value (Looker: a filter expression; Metabase: the parameter's default)
    field: str | None  # Looker: the tile's field it filters
    parameter: (
        dict[str, Any] | None
    )  # Metabase: the parameter as the dashcard query takes it (id, type, target)


class ElementInfo(OpenShape):
    id: str
    title: str | None
    type: str  # vis, text, ... (Looker element type; Metabase card display or "text")
    look_id: str | None
    question_id: str | None
    query_id: str | None  # Looker: the query the tile runs
    database_id: str | None  # Metabase: the database the question runs on
    model: str | None
    explore: str | None
    sql: str | None  # Metabase native SQL; Looker: null (LookML generates it)
    dimensions: list[str]
    measures: list[str]
    columns: list[str]  # warehouse columns the tile reads, where known
    tables: list[TableRef]
    runnable: bool  # has a query (text tiles do not)
    static_error: str | None  # an error visible without running (e.g. a field missing from the explore)
    # The dashboard's filters as the dashboard renders the tile: each filter's default value and where it
    # applies (Looker: the query field it filters; Metabase: the parameter id, type and target of the dashcard).
    dashboard_filters: list[AppliedFilter]
    dashboard_id: str | None  # the dashboard the tile is on (Metabase runs a dashcard through it)


def new_element(*, id: str, title: str | None, type: str, runnable: bool, **known: Any) -> ElementInfo:
    """An ElementInfo with what the tool told (`known`: any other field of ElementInfo); every field it did not
    tell is empty: null, or an empty list."""
    element = ElementInfo(
        id=id, title=title, type=type, look_id=None, question_id=None, query_id=None, database_id=None,
        model=None, explore=None, sql=None, dimensions=[], measures=[], columns=[], tables=[],
        runnable=runnable, static_error=None, dashboard_filters=[], dashboard_id=None,
    )  # fmt: skip
    unknown = set(known) - set(ElementInfo.__annotations__)
    if unknown:
        raise TypeError(f"ElementInfo has no field {sorted(unknown)}")
    element.update(known)  # type: ignore[typeddict-item]
    return element


# What a BI tool tells of a dashboard besides its id (the list answer names the id otherwise). No docstring: it
# would become a description in a published output schema.
class DashboardFacts(OpenShape):
    title: str
    folder: str | None
    created_at: str | None
    last_updated_at: str | None
    view_count: int | None
    url: str | None


class DashboardSummary(DashboardFacts):
    id: str


class DashboardInfo(DashboardSummary):
    elements: list[ElementInfo]


# One tile's health in a dashboard health report (bi_check_dashboard_health's `elements`). No docstring: it would
# become the description in the tool's published output schema.
class ElementHealth(TypedDict):
    element_id: str
    title: str | None
    status: TileStatus
    row_count: int | None
    error: str | None
    elapsed_ms: float


# What running one tile gave: its health, with room for what a tool adds.
class TileOutcome(ElementHealth, OpenShape):
    pass
