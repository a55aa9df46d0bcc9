"""Output shapes of the bi-api toolset (agent-toolset spec category 5), with the spec's field names.

Every element names the warehouse tables it reads (beyond the spec); where the spec returns a list, the answer is
an object with the list under a named key next to totals and provenance.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from ade_platform.lib.bi import report
from ade_platform.lib.bi.look_rows import ColumnShape, MaskedColumn
from ade_platform.lib.bi.shapes import DashboardFacts, TableRef
from ade_platform.lib.shapes import OpenShape
from mcp_bridge.toolsets.schemas.dbt import _spec_list
from mcp_bridge.toolsets.schemas.paging import Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance


# ---- bi_list_dashboards ------------------------------------------------------------------------------------
class _ListedId(OpenShape):
    dashboard_id: str


class DashboardListItem(_ListedId, DashboardFacts):  # the id first, as the spec lists it
    pass


class DashboardList(Paged):
    tool: str
    dashboards: Annotated[list[DashboardListItem], _spec_list("the accessible dashboards")]
    total: int
    provenance: Provenance


# ---- bi_get_dashboard_elements -----------------------------------------------------------------------------
class ElementOut(OpenShape):
    element_id: str
    title: str | None
    element_type: str
    model_name: str | None
    explore_name: str | None
    look_id: str | None
    question_id: str | None
    database_id: str | None
    dimensions: list[str]
    measures: list[str]
    sql: str | None
    tables: list[TableRef]
    has_error: bool
    error_detail: str | None
    # the dashboard's filters the tile is rendered with: filter name -> its default value (the health and row
    # count tools run the tile so)
    dashboard_filters: dict[str, Any]


class DashboardElements(Paged):
    dashboard_id: str
    tool: str
    title: str
    elements: Annotated[list[ElementOut], _spec_list("the dashboard's tiles")]
    element_count: int
    total: int
    errors_checked_at: str | None
    # the dashboard changed after that health check: its has_error flags may describe tiles it no longer has
    errors_stale: bool
    provenance: Provenance


# ---- bi_check_dashboard_health -----------------------------------------------------------------------------
class HealthAnswer(report.DashboardHealth):
    tool: str
    checked_at: str
    provenance: Provenance


# ---- bi_verify_row_counts ----------------------------------------------------------------------------------
class RowCountAnswer(OpenShape):
    dashboard_id: str
    tool: str
    title: str
    checked_at: str
    min_rows: int
    elements: Annotated[list[report.ElementRowCount], _spec_list("one entry per tile that ran")]
    total_elements: int
    healthy_count: int
    failing_count: int
    skipped_elements: int
    elapsed_ms: float
    provenance: Provenance


# ---- bi_run_look -------------------------------------------------------------------------------------------
class LookAnswer(OpenShape):
    look_id: int
    title: str | None
    row_count: int
    rows: list[dict[str, Any]]
    elapsed_ms: float
    limit: int
    truncated: bool
    mode: Literal["rows", "shape"]
    masked_columns: list[MaskedColumn]
    tables: list[TableRef]
    columns: NotRequired[list[ColumnShape]]  # shape mode
    redacted: NotRequired[bool]  # shape mode: no value of any row is in the answer
    note: NotRequired[str]
    provenance: Provenance
