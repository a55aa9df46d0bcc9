"""The snowflake tools as an agent sees them: parameters (the spec's camelCase names), descriptions, answer
shapes. The runtime in service.py does the work: every call an audited live run through the metadata-only proxy."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp.tools import ToolResult
from mcp.types import TextContent
from pydantic import Field

from ade_platform.lib import paging
from ade_platform.lib.snowflake.objects import OBJECT_TYPES
from mcp_bridge.toolsets.base import DESTRUCTIVE, READ_ONLY_OPEN_WORLD, SYNC, tool
from mcp_bridge.toolsets.schemas.paging import Cursor, Detail, GraphLimit, Limit
from mcp_bridge.toolsets.schemas.snowflake import (
    DdlAnswer,
    DdlResult,
    DependenciesAnswer,
    LineageAnswer,
    ObjectDescription,
    ObjectList,
    QueryAnswer,
    ScalarAnswer,
    StalenessAnswer,
    SyncAnswer,
)
from mcp_bridge.toolsets.snowflake.service import SnowflakeRuntime

ObjectType = Literal[OBJECT_TYPES]  # type: ignore[valid-type]
Connection = Annotated[
    str | None,
    Field(max_length=255),
]
Query = Annotated[str, Field(min_length=1, max_length=100_000)]
Database = Annotated[str | None, Field(max_length=255)]
Schema = Annotated[str | None, Field(max_length=255)]
ObjectName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1000,
    ),
]

# Parameters several tools take: described once, in the instructions (new_toolset), not in each input schema.
PARAMETERS = {
    "connection": "Connection name from the snow CLI config; default: the configured one.",
    "database, schema": "Default: the connection's.",
    "objectName": "Object name, optionally qualified (DB.SCHEMA.NAME); functions/procedures as NAME(ARG_TYPES).",
}
Cause = Annotated[str | None, Field(max_length=500, description="Why (kept in the audit trail).")]


class SnowflakeTools:
    def __init__(self, rt: SnowflakeRuntime):
        self.rt = rt

    @tool(READ_ONLY_OPEN_WORLD)
    def execute_sql(self, query: Query, connection: Connection = None) -> QueryAnswer:
        """Run one Snowflake SQL statement through the metadata-only proxy: metadata queries return rows, data
        queries only columns, types and null shares. Never values; writes are refused; each call stands alone
        (no RESULT_SCAN, $variables)."""
        _, proxy = self.rt.services(connection)
        return self.rt.audited("execute_sql", {"query": query}, connection, lambda: proxy.execute_sql(query))

    @tool(READ_ONLY_OPEN_WORLD)
    def execute_scalar(
        self,
        query: Query,
        connection: Connection = None,
        limit: Annotated[int, Field(ge=1, le=100_000)] = 100,
    ) -> ScalarAnswer:
        """Run a Snowflake metadata or counting query (COUNT, COUNT_IF, APPROX_COUNT_DISTINCT) and return its
        values. A query that would return row values gets execute_sql's schema-only answer instead."""
        _, proxy = self.rt.services(connection)
        return self.rt.audited(
            "execute_scalar",
            {"query": query, "limit": limit},
            connection,
            lambda: proxy.execute_scalar(query, limit),
        )

    @tool(READ_ONLY_OPEN_WORLD)
    def list_objects(
        self,
        objectType: ObjectType,
        database: Database = None,
        schema: Schema = None,
        like: Annotated[str | None, Field(max_length=255, description="SQL LIKE pattern.")] = None,
        connection: Connection = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> ObjectList:
        """List Snowflake objects of a type in a database or schema (SHOW rows), excluded objects removed.
        Paged; like filters on the name."""
        service, _ = self.rt.services(connection)
        answer = self.rt.audited(
            "list_objects",
            {"objectType": objectType, "database": database, "schema": schema, "like": like},
            connection,
            lambda: service.list_objects(objectType, database, schema, like),
        )
        query = ("list_objects", connection, objectType, database, schema, like)
        return paging.page_answer(  # type: ignore[return-value]
            answer, "objects", limit, cursor, query=query, cut_at_source=answer["truncated"],
            item_key=lambda r: (r.get("database_name"), r.get("schema_name"), r.get("name")),
        )  # fmt: skip

    @tool(READ_ONLY_OPEN_WORLD)
    def describe_object(
        self,
        objectType: ObjectType,
        objectName: ObjectName,
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
    ) -> ObjectDescription:
        """Detailed metadata of one Snowflake object: columns with types, nullability, defaults and comments for
        tables and views; properties for other kinds."""
        service, _ = self.rt.services(connection)
        return self.rt.audited(
            "describe_object",
            {"objectType": objectType, "objectName": objectName, "database": database, "schema": schema},
            connection,
            lambda: service.describe_object(objectType, objectName, database, schema),
        )

    @tool(READ_ONLY_OPEN_WORLD, answer=DdlAnswer)
    def get_ddl(
        self,
        objectType: Annotated[str, Field(max_length=40, description=f"One of: {', '.join(OBJECT_TYPES)}.")],
        objectName: ObjectName,
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
    ) -> ToolResult:
        """The DDL that recreates a Snowflake object, ready for a .sql file (GET_DDL, else rebuilt from
        INFORMATION_SCHEMA; `source` says which)."""
        service, _ = self.rt.services(connection)
        body = self.rt.audited(
            "get_ddl",
            {"objectType": objectType, "objectName": objectName, "database": database, "schema": schema},
            connection,
            lambda: service.get_ddl(objectType, objectName, database, schema),
        )
        return ToolResult(content=[TextContent(type="text", text=body["ddl"])], structured_content=body)

    @tool(READ_ONLY_OPEN_WORLD)
    def get_lineage(
        self,
        objectName: ObjectName,
        objectType: Literal["table", "view"],
        database: Database = None,
        schema: Schema = None,
        direction: Literal["upstream", "downstream", "both"] = "both",
        connection: Connection = None,
        depth: Annotated[int | None, Field(ge=1, le=100, description="Hops; default: all.")] = None,
        limit: GraphLimit = None,
        cursor: Cursor = None,
        detail: Detail = "full",
    ) -> LineageAnswer:
        """Upstream and downstream dependencies of a Snowflake table or view (OBJECT_DEPENDENCIES, else sqlglot
        over view definitions). Paged, nearest first; detail=summary gives counts only."""
        service, _ = self.rt.services(connection)
        answer = self.rt.audited(
            "get_lineage",
            {"objectName": objectName, "objectType": objectType, "direction": direction, "depth": depth},
            connection,
            lambda: service.get_lineage(objectName, objectType, database, schema, direction, depth),
        )
        query = ("get_lineage", connection, objectName, objectType, database, schema, direction, depth)
        return _lineage_page(
            answer, limit, cursor, detail, query, self.rt.ctx.settings.limits.max_lineage_nodes
        )

    @tool(READ_ONLY_OPEN_WORLD)
    def get_dependencies(
        self,
        objectName: ObjectName,
        objectType: Literal["view", "materialized_view", "function", "procedure"],
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> DependenciesAnswer:
        """The objects a Snowflake view, function or procedure reads directly (REFERENCE_OBJECT_NAME /
        REFERENCE_OBJECT_TYPE). Paged."""
        service, _ = self.rt.services(connection)
        answer = self.rt.audited(
            "get_dependencies",
            {"objectName": objectName, "objectType": objectType},
            connection,
            lambda: service.get_dependencies(objectName, objectType, database, schema),
        )
        query = ("get_dependencies", connection, objectName, objectType, database, schema)
        return paging.page_answer(  # type: ignore[return-value]
            answer, "dependencies", limit, cursor, query=query, item_key=lambda d: d["name"]
        )

    @tool(SYNC)
    def sync_objects(
        self,
        connection: Connection = None,
        targetDir: Annotated[
            str | None,
            Field(
                max_length=4096,
                description="The sync root or a folder in it; default: snowflake.sync.target_dir.",
            ),
        ] = None,
        includeDatabases: bool = True,
        includeSchemas: bool = True,
        includeTables: bool = True,
        includeViews: bool = True,
        includeFunctions: bool = False,
        includeProcedures: bool = False,
        includeStages: bool = False,
        includeTasks: bool = False,
        databases: Annotated[
            list[str] | None,
            Field(
                max_length=100,
                description="Default: the configured list, else all.",
            ),
        ] = None,
        cause: Cause = None,
    ) -> SyncAnswer:
        """Write Snowflake DDL to the local repository (src/{DB}/{SCHEMA}/<kind>/{NAME}.sql and an index of
        hashes); excluded objects are never written. Rewrites files; an audited run."""
        includes = {
            "include_databases": includeDatabases,
            "include_schemas": includeSchemas,
            "include_tables": includeTables,
            "include_views": includeViews,
            "include_functions": includeFunctions,
            "include_procedures": includeProcedures,
            "include_stages": includeStages,
            "include_tasks": includeTasks,
        }
        return self.rt.sync(connection, targetDir, includes, databases, cause)

    @tool(READ_ONLY_OPEN_WORLD)
    def check_staleness(
        self,
        objectName: Annotated[str, Field(min_length=1, max_length=1000, description="DB.SCHEMA.NAME")],
        objectType: Annotated[str, Field(max_length=40, description="table, view, schema, ...")],
        localPath: Annotated[
            str | None,
            Field(
                max_length=4096,
                description="The synced .sql file; default: the one the index records.",
            ),
        ] = None,
        connection: Connection = None,
    ) -> StalenessAnswer:
        """Whether a synced DDL file differs from the Snowflake object's current DDL (isStale, with both
        hashes)."""
        return self.rt.staleness(objectName, objectType, localPath, connection)

    @tool(DESTRUCTIVE)
    def execute_ddl(
        self,
        ddl: Annotated[str, Field(min_length=1, max_length=100_000)],
        connection: Connection = None,
        cause: Cause = None,
    ) -> DdlResult:
        """Run one Snowflake CREATE, ALTER, DROP, UNDROP or COMMENT statement as an audited run; no rows come
        back. Allow-listed kinds only; grants, users, roles, integrations, policies, DML and CREATE ... AS
        SELECT are refused."""
        return self.rt.execute_ddl(ddl, connection, cause)


def _lineage_page(
    answer: dict[str, Any],
    limit: int | None,
    cursor: str | None,
    detail: str,
    query: tuple[Any, ...],
    nodes: int,
) -> dict[str, Any]:
    """get_lineage's page: nodes nearest first, the edges (and their `lineage` rows, one per edge) whose
    farther end is on it; `truncated` also when the walk itself stopped at snowflake's node limit."""
    walk_cut = bool(answer["truncated"])
    if detail == "summary":
        summary = paging.graph_summary(
            answer["nodes"], answer["edges"], kind_key="type", depth_key="distance"
        )
        return {**answer, "nodes": [], "edges": [], "lineage": [], "summary": summary,
                "next_cursor": None, "truncated": walk_cut}  # fmt: skip
    version = paging.live_version([answer["nodes"], answer["edges"]])
    shown, edges = paging.graph_page(
        answer["nodes"], answer["edges"], limit, cursor, version=version, query=query, cap=nodes,
        default=nodes, node_key="name",
    )  # fmt: skip
    on_page = {(e["from"], e["to"]) for e in edges}
    rows = [
        row
        for e, row in zip(answer["edges"], answer["lineage"], strict=True)
        if (e["from"], e["to"]) in on_page
    ]
    return {**answer, "nodes": shown.items, "edges": edges, "lineage": rows, "next_cursor": shown.next_cursor,
            "truncated": shown.truncated or walk_cut}  # fmt: skip
