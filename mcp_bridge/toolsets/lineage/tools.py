"""The lineage tools as an agent sees them: parameters, descriptions, answer shapes. The service does the work."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from fastmcp.tools import ToolResult
from pydantic import Field

from mcp_bridge.toolsets.base import READ_ONLY, READ_ONLY_OPEN_WORLD, tool
from mcp_bridge.toolsets.schemas.lineage import IncidentAnswer, TraceAnswer, WhatChangedAnswer
from mcp_bridge.toolsets.schemas.paging import Cursor, Detail, GraphLimit, Until

if TYPE_CHECKING:
    from mcp_bridge.toolsets.lineage.service import LineageService

StartKind = Literal["dashboard", "tile", "table", "dbt_node", "job"]
Start = Annotated[str, Field(min_length=1, max_length=1024)]
System = Annotated[
    str | None,
    Field(
        max_length=64,
    ),
]

# Parameters several tools take: described once, in the instructions (new_toolset), not in each input schema.
PARAMETERS = {
    "start_kind": (
        "What `start` names: a BI dashboard or tile (id or title), a warehouse table ([db.]schema.name or "
        "name), a dbt node (unique_id or name), or a job/DAG/deployment (dbt Cloud job id, DAG id, "
        "flow/deployment, Dagster job name)."
    ),
    "start": "The id or name of the start node, or a node id.",
    "live": (
        "Probe the symptom and its nearest hops live (within lineage.live_budget_ms, one audited read-only run); "
        "false: the snapshots only."
    ),
    "system": (
        "Narrow the start to one system: looker or metabase for BI, dbt_cloud, airflow, prefect or dagster "
        "for jobs."
    ),
}
Live = bool


class LineageTools:
    def __init__(self, service: LineageService):
        self.service = service

    @tool(READ_ONLY, answer=TraceAnswer)
    def lineage_trace(
        self,
        start_kind: StartKind,
        start: Start,
        system: System = None,
        direction: Annotated[
            Literal["upstream", "downstream", "both"],
            Field(description="upstream: toward the sources."),
        ] = "both",
        depth: Annotated[int | None, Field(ge=1, le=100, description="Hops each way; default: all.")] = None,
        max_nodes: Annotated[
            int | None, Field(ge=1, le=5000, description="Default: lineage.max_nodes.")
        ] = None,
        limit: GraphLimit = None,
        cursor: Cursor = None,
        detail: Detail = "full",
    ) -> ToolResult:
        """Cross-system lineage from a dashboard, tile, table, dbt node or job: BI tiles, warehouse tables, dbt
        models and sources, and the jobs that build them. Each hop has its latest health (run, tests, freshness,
        drift, tile), each edge how it was inferred. Paged, nearest first; detail=summary gives counts only.
        Start from a job to see what it builds."""
        return self.service.trace(
            start_kind, start, system, direction, depth, max_nodes, limit, cursor, detail
        )

    @tool(READ_ONLY_OPEN_WORLD, answer=IncidentAnswer)
    def lineage_explain_incident(
        self, start_kind: StartKind, start: Start, system: System = None, live: Live = True
    ) -> ToolResult:
        """Root cause of a broken, stale or wrong dashboard, tile, table, dbt node or job. Probes the symptom
        and its nearest hops live, then ranks causes (those explaining the symptom's error first, then by
        onset), each with its evidence, onset and the tool that confirms it. With no error (a number wrong),
        compares live profiles with stored ones to find the first upstream node whose values changed."""
        return self.service.explain_incident(start_kind, start, system, live)

    @tool(READ_ONLY_OPEN_WORLD, answer=WhatChangedAnswer)
    def lineage_what_changed(
        self,
        start_kind: StartKind,
        start: Start,
        since: Annotated[
            str,
            Field(
                min_length=2,
                max_length=40,
            ),
        ] = "7d",
        system: System = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Events per page.")] = 50,
        cursor: Cursor = None,
        live: Live = True,
        until: Until = None,
    ) -> ToolResult:
        """What changed upstream of a dashboard, tile, table, dbt node or job since a time, newest first. Schema
        changes, dbt runs, job runs, source freshness, tile health, git commits and (live) value changes. Paged;
        since/until bound the window."""
        return self.service.what_changed(start_kind, start, since, system, limit, cursor, live, until)
