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

Tool = Literal["looker", "metabase"]
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
    "dashboard_id": 'The dashboard\'s numeric id as a string ("42").',
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
        """Looker or Metabase dashboards with folder, update time, views and URL; from the BI inventory snapshot
        when nothing changed, else live. Paged list `dashboards`."""
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
        """The tiles of a Looker or Metabase dashboard with the query behind each (model, explore, fields or
        SQL), the warehouse tables it reads and known errors. Paged list `elements`."""
        answer = self.service.dashboard_elements(dashboard_id, tool)
        query = ("bi_get_dashboard_elements", tool, dashboard_id)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "elements", limit, cursor, query=query, item_key=lambda e: e["element_id"]
        )

    @tool(READ_ONLY_OPEN_WORLD)
    async def bi_check_dashboard_health(
        self, dashboard_id: DashboardId, tool: Tool, mcp: Context
    ) -> HealthAnswer:
        """Whether a dashboard renders: runs every tile with its default filters and reports ok, error or empty
        per tile and the first error. Live, read-only."""
        return await self.service.check_health(dashboard_id, tool, mcp.report_progress)

    @tool(READ_ONLY_OPEN_WORLD)
    async def bi_verify_row_counts(
        self,
        dashboard_id: DashboardId,
        tool: Tool,
        mcp: Context,
        min_rows: Annotated[int, Field(ge=0, le=1_000_000, description="Fewest rows of a healthy tile.")] = 1,
        compare_to_warehouse: Annotated[
            bool,
            Field(
                description="Also count the rows of each tile's warehouse tables: is the table empty or does "
                "the filter drop all?"
            ),
        ] = False,
    ) -> RowCountAnswer:
        """Row count of every tile of a dashboard as rendered, against min_rows: finds dashboards that render
        but show nothing. Live, read-only. List `elements`."""
        return await self.service.verify_row_counts(
            dashboard_id, tool, min_rows, compare_to_warehouse, mcp.report_progress
        )

    @tool(READ_ONLY_OPEN_WORLD)
    def bi_run_look(
        self,
        look_id: Annotated[int, Field(ge=1)],
        limit: Annotated[
            int,
            Field(ge=1, le=5000, description="Capped at bi.max_rows (default 100)."),
        ] = 1000,
    ) -> LookAnswer:
        """Run a Looker Look (a saved query) and return its rows; personal-data and excluded columns come back
        masked. Looker only; live, read-only."""
        return self.service.run_look(look_id, limit)
