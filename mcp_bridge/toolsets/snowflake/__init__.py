"""snowflake: Snowflake through the `snow` CLI, behind a metadata-only proxy (snowflake-cli-mcp spec).

Tool names and parameters follow the spec (camelCase). Departures, per DESIGN.md: queries are classified on
the sqlglot AST (METADATA / SCALAR / DATA / WRITE, deny by default), DATA answers carry schema and safe
statistics only, exclusions are checked before anything runs, GET_DDL / OBJECT_DEPENDENCIES fall back to
INFORMATION_SCHEMA and parsed view definitions (answers say so). Every call is an audited Dagster run:
execute_ddl / sync_objects in-line, the read-only tools on the fast path (the run record follows). Errors carry the spec's code (`code`: E1001...) next to the stable `error` name.

`tools.py` holds what an agent sees, `service.py` what the tools do (the runtime: runners per connection, the
guard catalog, the audited call), `schemas/snowflake.py` the answers' shapes.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.snowflake.service import SnowflakeRuntime
from mcp_bridge.toolsets.snowflake.tools import PARAMETERS, SnowflakeTools

INSTRUCTIONS = (
    "Snowflake through the snow CLI behind a metadata-only proxy: agents learn schema, never data. "
    "execute_sql runs one statement: metadata (SHOW, DESCRIBE, INFORMATION_SCHEMA) comes back as rows, "
    "counting aggregates as values, anything that reads rows as column names/types with row count and null "
    "percentages only when they cannot answer a predicate. Writes go through execute_ddl (audited). "
    "Objects matching the exclusion patterns are never queried."
)


def build(ctx: BridgeContext) -> FastMCP:
    return build_with(SnowflakeRuntime(ctx))


def build_with(rt: SnowflakeRuntime) -> FastMCP:
    """The toolset over a given runtime (tests pass one whose runner is not the snow CLI)."""
    return new_toolset("snowflake", INSTRUCTIONS, SnowflakeTools(rt), parameters=PARAMETERS)
