"""bi-api: Looker and Metabase dashboards, tiles and looks (spec category 5).

Cached (from the `bi_inventory_<tool>` snapshot, with provenance; live when it was never materialized or does
not know the dashboard): bi_list_dashboards, bi_get_dashboard_elements. Live and read-only (each call is an
audited Dagster run): bi_check_dashboard_health and bi_verify_row_counts run every tile of the dashboard with
bounded concurrency and a per-tile timeout, sending MCP progress as tiles finish; bi_run_look runs one Look.
Beyond the spec, every element names the warehouse tables it reads, and bi_verify_row_counts can count the rows
of those tables to tell an empty table from a tile whose own filter drops every row. Spec tools that return a
list return an object here, the list under a named key next to totals and provenance.

The package is named for the concept (`bi:` in ade.yaml); the server keeps the spec's name. `tools.py` holds
what an agent sees, `service.py` what the tools do, `schemas/bi.py` the answers' shapes.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.bi.service import BiService
from mcp_bridge.toolsets.bi.tools import PARAMETERS, BiTools

INSTRUCTIONS = (
    "Looker and Metabase dashboards: list them, see which models and warehouse tables each tile reads, "
    "check they render, verify tiles return rows, run Looks. Read-only."
)


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset("bi-api", INSTRUCTIONS, BiTools(BiService(ctx)), parameters=PARAMETERS)
