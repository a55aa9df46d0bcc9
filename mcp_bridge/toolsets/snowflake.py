"""snowflake: Snowflake through the `snow` CLI, behind a metadata-only proxy (snowflake-cli-mcp spec).

Tool names and parameters follow the spec (camelCase). Departures, per DESIGN.md: queries are classified on
the sqlglot AST (METADATA / SCALAR / DATA / WRITE, deny by default), DATA answers carry schema and safe
statistics only, exclusions are checked before anything runs, GET_DDL / OBJECT_DEPENDENCIES fall back to
INFORMATION_SCHEMA and parsed view definitions (answers say so). Every call is an audited Dagster run:
execute_ddl / sync_objects in-line, the read-only tools on the fast path (the run record follows). Errors carry the spec's code (`code`: E1001...) next to the stable `error` name.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from mcp.types import TextContent
from pydantic import Field

from ade_platform.lib.snowflake.objects import OBJECT_TYPES
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD, new_toolset
from mcp_bridge.toolsets.schemas.batch import deferred_schemas_of
from mcp_bridge.toolsets.schemas.snowflake import (
    DdlAnswer,
    DependenciesAnswer,
    LineageAnswer,
    ObjectDescription,
    ObjectList,
    QueryAnswer,
    ScalarAnswer,
)
from mcp_bridge.toolsets.snowflake_live import register_live_tools
from mcp_bridge.toolsets.snowflake_runtime import SnowflakeRuntime, failures

ObjectType = Literal[OBJECT_TYPES]  # type: ignore[valid-type]
Connection = Annotated[
    str | None,
    Field(
        max_length=255, description="Connection name from the snow CLI config; default: the configured one."
    ),
]
Query = Annotated[str, Field(min_length=1, max_length=100_000, description="One SQL statement.")]
Database = Annotated[str | None, Field(max_length=255, description="Database; default: the connection's.")]
Schema = Annotated[str | None, Field(max_length=255, description="Schema; default: the connection's.")]
ObjectName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1000,
        description="Object name, optionally qualified (DB.SCHEMA.NAME); functions/procedures as NAME(ARG_TYPES).",
    ),
]

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
    server = new_toolset("snowflake", INSTRUCTIONS)

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def execute_sql(query: Query, connection: Connection = None) -> QueryAnswer:
        """Run one SQL statement through the metadata-only proxy.

        METADATA (SHOW, DESCRIBE, allow-listed INFORMATION_SCHEMA / ACCOUNT_USAGE views, GET_DDL) returns
        rows, minus rows naming excluded objects. SCALAR (COUNT / COUNT_IF / APPROX_COUNT_DISTINCT over one
        table, null tests only) returns the values. DATA returns `columns` (name, type, null_percentage),
        `row_count` and, for VARIANT columns, `variant_interfaces` (TypeScript: keys and types, never values);
        statistics and types are withheld (null) when the query shape could answer a predicate. Writes,
        batches and excluded objects are refused before anything runs; so is anything reaching an earlier
        statement's result or a session variable (LAST_QUERY_ID, RESULT_SCAN, DESCRIBE RESULT, $var):
        SESSION_STATE_REFUSED, since each call stands alone.
        """
        with failures():
            _, proxy = rt.services(connection)
            return rt.audited("execute_sql", {"query": query}, connection, lambda: proxy.execute_sql(query))

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def execute_scalar(
        query: Query,
        connection: Connection = None,
        limit: Annotated[int, Field(ge=1, le=100_000, description="Max rows to return.")] = 100,
    ) -> ScalarAnswer:
        """Run a metadata or counting query and return its values (at most `limit` rows, capped by
        guardrail.maxScalarRows). A statement that would return row values is reclassified (the spec's
        QUERY_CLASSIFIED): the answer is the redacted, schema-only response of execute_sql with
        `reclassified: true`, `error: "QUERY_CLASSIFIED"` and `code: "E1002"`, never the values."""
        with failures():
            _, proxy = rt.services(connection)
            return rt.audited(
                "execute_scalar",
                {"query": query, "limit": limit},
                connection,
                lambda: proxy.execute_scalar(query, limit),
            )

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def list_objects(
        objectType: Annotated[ObjectType, Field(description="Kind of object to list.")],
        database: Database = None,
        schema: Schema = None,
        like: Annotated[
            str | None, Field(max_length=255, description="SQL LIKE pattern on the name.")
        ] = None,
        connection: Connection = None,
    ) -> ObjectList:
        """List objects of a type (`snow object list`, or SHOW for kinds the CLI lacks), scoped to a database
        or schema. `objects` lists them as Snowflake's SHOW rows (with `count`, `truncated`); excluded objects
        and people's details are removed."""
        with failures():
            service, _ = rt.services(connection)
            return rt.audited(
                "list_objects",
                {"objectType": objectType, "database": database, "schema": schema, "like": like},
                connection,
                lambda: service.list_objects(objectType, database, schema, like),
            )

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def describe_object(
        objectType: Annotated[ObjectType, Field(description="Kind of object.")],
        objectName: ObjectName,
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
    ) -> ObjectDescription:
        """Detailed metadata of one object (`snow object describe`) as `metadata` rows: columns with types,
        nullability, defaults and comments for tables and views; properties for other kinds."""
        with failures():
            service, _ = rt.services(connection)
            return rt.audited(
                "describe_object",
                {"objectType": objectType, "objectName": objectName, "database": database, "schema": schema},
                connection,
                lambda: service.describe_object(objectType, objectName, database, schema),
            )

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=deferred_schemas_of(DdlAnswer)[DdlAnswer])
    def get_ddl(
        objectType: Annotated[str, Field(max_length=40, description=f"One of: {', '.join(OBJECT_TYPES)}.")],
        objectName: ObjectName,
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
    ) -> ToolResult:
        """The DDL that recreates an object (GET_DDL), as the text content of the answer (SQL, ready for a
        .sql file); the structured content carries `ddl`, `source` and `note`. Where GET_DDL is unavailable
        the DDL is rebuilt from INFORMATION_SCHEMA: `source` says which (`get_ddl` | `information_schema`)
        and `note` explains."""
        with failures():
            service, _ = rt.services(connection)
            body = rt.audited(
                "get_ddl",
                {"objectType": objectType, "objectName": objectName, "database": database, "schema": schema},
                connection,
                lambda: service.get_ddl(objectType, objectName, database, schema),
            )
            return ToolResult(content=[TextContent(type="text", text=body["ddl"])], structured_content=body)

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def get_lineage(
        objectName: ObjectName,
        objectType: Annotated[Literal["table", "view"], Field(description="table or view.")],
        database: Database = None,
        schema: Schema = None,
        direction: Annotated[
            Literal["upstream", "downstream", "both"], Field(description="Which side to traverse.")
        ] = "both",
        connection: Connection = None,
        depth: Annotated[int | None, Field(ge=1, le=100, description="Hops; null = all.")] = None,
    ) -> LineageAnswer:
        """Upstream/downstream dependencies of a table or view (OBJECT_DEPENDENCIES; where unavailable,
        sqlglot over view definitions - `source` and `note` say so). `lineage` lists the edges as
        OBJECT_DEPENDENCIES rows (REFERENCED_* / REFERENCING_*, as the spec returns them); `nodes` carry hop
        distance and side, `edges` the same edges as from/to names."""
        with failures():
            service, _ = rt.services(connection)
            return rt.audited(
                "get_lineage",
                {"objectName": objectName, "objectType": objectType, "direction": direction, "depth": depth},
                connection,
                lambda: service.get_lineage(objectName, objectType, database, schema, direction, depth),
            )

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def get_dependencies(
        objectName: ObjectName,
        objectType: Annotated[
            Literal["view", "materialized_view", "function", "procedure"],
            Field(description="Kind of object."),
        ],
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
    ) -> DependenciesAnswer:
        """The objects a view, materialized view, function or procedure reads directly: `dependencies` items
        carry REFERENCE_OBJECT_NAME / REFERENCE_OBJECT_TYPE (the spec's columns) next to name/type."""
        with failures():
            service, _ = rt.services(connection)
            return rt.audited(
                "get_dependencies",
                {"objectName": objectName, "objectType": objectType},
                connection,
                lambda: service.get_dependencies(objectName, objectType, database, schema),
            )

    register_live_tools(server, rt)
    return server
