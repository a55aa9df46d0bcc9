"""lineage: one question across the stack — which tables a tile reads, which dbt models build them, from which
sources, which job or DAG runs each, how every hop is doing, and what broke (the spec's Gap 1).

The graph comes from the `cross_stack_lineage` asset (an adjacency index memoized per version). lineage_trace
stamps each hop with health from the newest run-level snapshots. lineage_explain_incident and
lineage_what_changed start from the symptom as it is now: they probe it and the hops nearest to it live, within
`lineage.live_budget_ms`, as one audited read-only run, and fall back to the snapshots for what the budget did
not reach, saying so; onsets come from the snapshot history.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.lineage.service import LineageService
from mcp_bridge.toolsets.lineage.tools import PARAMETERS, LineageTools

INSTRUCTIONS = (
    "Cross-stack lineage: dashboard tile -> warehouse table -> dbt model -> source, and the dbt Cloud job, "
    "Airflow DAG, Prefect deployment or Dagster job that builds each model, with each hop's latest health; "
    "the ranked root cause of an incident and what changed along the chain."
)


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset("lineage", INSTRUCTIONS, LineageTools(LineageService(ctx)), parameters=PARAMETERS)
