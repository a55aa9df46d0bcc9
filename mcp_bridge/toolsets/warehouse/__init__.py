"""warehouse: schema, drift, freshness and bounded read-only queries on DuckDB, Snowflake, BigQuery (spec
category 2).

Cached (from the store, with provenance): warehouse_get_schema, warehouse_detect_schema_drift,
warehouse_check_freshness (for tables Dagster tracks; others are checked live). Live (each an audited
Dagster run, provenance source "live"): warehouse_execute, warehouse_explain_query,
warehouse_detect_duplicates, warehouse_get_query_history. Spec tools that return a list return an object
here, the list under a named key next to totals and provenance.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.warehouse.tools import PARAMETERS, WarehouseTools

INSTRUCTIONS = (
    "Warehouse schema, drift, freshness and bounded read-only queries (DuckDB, Snowflake, BigQuery). "
    "Schema and drift answer from Dagster's snapshots; queries run live as audited Dagster runs."
)


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset("warehouse", INSTRUCTIONS, WarehouseTools(ctx), parameters=PARAMETERS)
