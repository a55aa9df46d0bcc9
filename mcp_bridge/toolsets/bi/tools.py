"""The bi-api tools as an agent sees them: parameters, descriptions, answer shapes. The service does the work."""

from __future__ import annotations

import time
from typing import Annotated, Literal

from fastmcp import Context
from pydantic import Field

from ade_platform.lib import paging
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD, tool
from mcp_bridge.toolsets.bi.service import BiService
from mcp_bridge.toolsets.schemas.bi import (
    DashboardElements,
    DashboardList,
    HealthAnswer,
    LookAnswer,
    RowCountAnswer,
)
from mcp_bridge.toolsets.schemas.paging import Cursor, Limit, NamePattern, Since, Until

Tool = Annotated[Literal["looker", "metabase"], Field(description="Which BI tool.")]
DashboardId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_:-]+$",
    ),
]

# Parameters several tools take: described once, in the instructions (new_toolset), not in each input schema.
PARAMETERS = {
    "dashboard_id": 'Dashboard ID. Looker: numeric string (e.g. "42"). Metabase: numeric string (e.g. "7").',
}


class BiTools:
    def __init__(self, service: BiService):
        self.service = service

    @tool(READ_ONLY_OPEN_WORLD)
    def bi_list_dashboards(
        self,
        tool: Tool,
        name_pattern: NamePattern = None,
        since: Since = None,
        until: Until = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> DashboardList:
        """All accessible dashboards with folder, creation and update times, view count and URL. One listing
        call checks for a dashboard added, removed or updated since the latest BI inventory snapshot: the snapshot
        answers when nothing changed (provenance says when it was taken), the live listing otherwise;
        provenance.stale with the reason when the tool cannot be reached. The spec's list is under `dashboards`,
        paged (limit, cursor -> next_cursor; docs/PAGING.md); name_pattern filters on the title, since/until on
        last_updated_at; total counts the dashboards that pass the filters."""
        answer = self.service.list_dashboards(tool)
        named = paging.name_matcher(name_pattern)
        updated = paging.window_matcher(since, until, time.time())
        query = ("bi_list_dashboards", tool, name_pattern, since, until)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "dashboards", limit, cursor, query=query, item_key=lambda d: d["dashboard_id"],
            keep=lambda d: named(d.get("title")) and updated(d.get("last_updated_at")),
        )  # fmt: skip

    @tool(READ_ONLY_OPEN_WORLD)
    def bi_get_dashboard_elements(
        self, dashboard_id: DashboardId, tool: Tool, limit: Limit = None, cursor: Cursor = None
    ) -> DashboardElements:
        """Every tile of a dashboard with the query behind it: Looker model, explore, dimensions and measures;
        Metabase question, database and native SQL or source table; and the warehouse tables each reads.
        has_error is set from LookML (a field missing from its explore) or from the latest health check
        (errors_checked_at says when; errors_stale when the dashboard changed since). One listing of the
        tool's dashboards checks for a change first: cached from the BI inventory when the dashboard is unchanged
        since, live otherwise; provenance.stale with the reason when the tool cannot be reached. The spec's list
        is under `elements`, paged (limit, cursor -> next_cursor; docs/PAGING.md); element_count counts them
        all."""
        answer = self.service.dashboard_elements(dashboard_id, tool)
        query = ("bi_get_dashboard_elements", tool, dashboard_id)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "elements", limit, cursor, query=query, item_key=lambda e: e["element_id"]
        )

    @tool(READ_ONLY_OPEN_WORLD)
    async def bi_check_dashboard_health(
        self, dashboard_id: DashboardId, tool: Tool, mcp: Context
    ) -> HealthAnswer:
        """Load a dashboard and run its tiles as rendering would (with the dashboard's filters and parameters at
        their default values): status ok / error (a tile failed) / unknown,
        element count, elements_with_errors, the first error, and every tile's status (ok, error, or empty
        when it rendered no row). Live and read-only."""
        return await self.service.check_health(dashboard_id, tool, mcp.report_progress)

    @tool(READ_ONLY_OPEN_WORLD)
    async def bi_verify_row_counts(
        self,
        dashboard_id: DashboardId,
        tool: Tool,
        mcp: Context,
        min_rows: Annotated[
            int, Field(ge=0, le=1_000_000, description="Minimum rows for a tile to count as healthy.")
        ] = 1,
        compare_to_warehouse: Annotated[
            bool,
            Field(
                description="Also count the rows of the warehouse tables behind each tile (through the "
                "configured warehouse), and say whether an empty tile's table is empty or its filter drops all."
            ),
        ] = False,
    ) -> RowCountAnswer:
        """Run every tile of a dashboard as the dashboard renders it (its filters' and parameters' default
        values applied), with bounded concurrency and a per-tile timeout, and report its row count
        against min_rows: row_count is null when the tile errors. Finds dashboards that render but show
        nothing. Live and read-only; sends progress as tiles finish. The spec's list is under `elements`."""
        return await self.service.verify_row_counts(
            dashboard_id, tool, min_rows, compare_to_warehouse, mcp.report_progress
        )

    @tool(READ_ONLY_OPEN_WORLD)
    def bi_run_look(
        self,
        look_id: Annotated[int, Field(ge=1, description="The Looker Look ID.")],
        limit: Annotated[
            int,
            Field(ge=1, le=5000, description="Maximum rows to return (at most bi.max_rows, default 100)."),
        ] = 1000,
    ) -> LookAnswer:
        """Run a Looker Look (a saved query) and return its rows, values as Looker returns them (keys are
        view.field names). Columns that look like personal data, and every column of a table the Snowflake
        exclusions name, come back masked (masked_columns says which and why); truncated says when there were
        more rows. Where configured (bi.run_look: shape), only columns, types, row count and null percentages
        come back. Looker-only. look_error when its LookML or SQL is broken. Live and read-only."""
        return self.service.run_look(look_id, limit)
