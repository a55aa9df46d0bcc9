"""The lineage tools as an agent sees them: parameters, descriptions, answer shapes. The service does the work."""

from __future__ import annotations

from typing import Annotated, Literal

from fastmcp.tools import ToolResult
from pydantic import Field

from mcp_bridge.toolsets.base import READ_ONLY, READ_ONLY_OPEN_WORLD, tool
from mcp_bridge.toolsets.lineage.service import LineageService
from mcp_bridge.toolsets.schemas.lineage import IncidentAnswer, TraceAnswer, WhatChangedAnswer
from mcp_bridge.toolsets.schemas.paging import Cursor, Detail, GraphLimit, Until

StartKind = Literal["dashboard", "tile", "table", "dbt_node", "job"]
Start = Annotated[
    str, Field(min_length=1, max_length=1024, description="The id or name of the start node, or a node id.")
]
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
    "system": (
        "Narrow the start to one system: looker or metabase for BI, dbt_cloud, airflow, prefect or dagster "
        "for jobs."
    ),
}
Live = Annotated[
    bool,
    Field(
        description="Probe the symptom and the nearest hops live (within lineage.live_budget_ms, as one audited "
        "read-only run); false: answer from the snapshots only."
    ),
]


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
            Field(description="upstream: toward the sources; downstream: toward the dashboards; both."),
        ] = "both",
        depth: Annotated[
            int | None, Field(ge=1, le=100, description="Hops each way; null = no limit.")
        ] = None,
        max_nodes: Annotated[
            int | None, Field(ge=1, le=5000, description="Node cap (default lineage.max_nodes, 300).")
        ] = None,
        limit: GraphLimit = None,
        cursor: Cursor = None,
        detail: Detail = "full",
    ) -> ToolResult:
        """The chain across systems from a dashboard, tile, table, dbt node or job: BI tiles, the warehouse
        tables they read, the dbt models that build those tables and their sources, plus the job or DAG that
        builds each model — every hop with its latest health (dbt run status and tests, source freshness,
        drift, the builder's last run, the tile's health) and every edge with how it was inferred.

        Bounded by depth and a node cap (`truncated: true` when cut). Nodes are paged nearest first, each page
        with its edges and unresolved links (limit, default the node cap; cursor -> next_cursor;
        docs/PAGING.md). detail=summary answers only `summary` (nodes per depth and per kind), no health read.
        Start from a job to see what it builds.
        """
        return self.service.trace(
            start_kind, start, system, direction, depth, max_nodes, limit, cursor, detail
        )

    @tool(READ_ONLY_OPEN_WORLD, answer=IncidentAnswer)
    def lineage_explain_incident(
        self, start_kind: StartKind, start: Start, system: System = None, live: Live = True
    ) -> ToolResult:
        """What broke and why, for a broken or stale dashboard, tile, table, dbt node or job. Starts from the
        symptom as it is now (a tile is run, a table read, the newest dbt results and runs looked up) and probes
        the hops nearest to it live (one catalog read per table, a max(loaded_at) per source with freshness
        thresholds, the last run of each job that builds a model), then ranks the causes: first those that
        explain the symptom's own error (the column the tile misses, renamed in its table), then by onset (a
        condition that already held while the symptom was healthy is background, ranked low, and says so).
        Each cause names the object and the change, where its evidence came from (live, or which snapshot and
        how old), its onset, and the tool that confirms it; the verdict says it in one sentence.
        With no error (builds green, a number wrong), each relation on the chain is profiled live and compared
        with its last stored profile; the cause is the first node upstream whose values changed the same way
        (rows, a column's value mix, nulls, duplicates), with the numbers, and the code change of that node
        between the two profiles when there is one.
        """
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
                description="From when: an ISO-8601 time (2026-11-24T14:00:00Z) or a span back from now (90m, "
                "24h, 7d).",
            ),
        ] = "7d",
        system: System = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Events per page (docs/PAGING.md).")] = 50,
        cursor: Cursor = None,
        live: Live = True,
        until: Until = None,
    ) -> ToolResult:
        """What changed along the chain upstream of a dashboard, tile, table, dbt node or job since a moment,
        newest first, each event with its source: schema changes of its tables (snapshot history, what live
        tools observed, and a live read now), dbt runs and their outcome (incl. a newer run in the target
        folder and a dbt invocation that failed at parse), runs of the jobs and DAGs that build its models,
        freshness transitions of its sources, BI health transitions of its tiles, commits to the dbt
        project that touched its files (git: author, time, message, files), and (live) each relation's
        significant value changes against its profile at `since`. Paged with limit and cursor
        (docs/PAGING.md: the cursor is the last event's sort key, so pages hold while new events arrive);
        since/until bound the window.
        """
        return self.service.what_changed(start_kind, start, since, system, limit, cursor, live, until)
