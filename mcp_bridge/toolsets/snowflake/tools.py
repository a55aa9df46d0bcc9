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
Query = Annotated[str, Field(min_length=1, max_length=100_000, description="One SQL statement.")]
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
    "database": "Database; default: the connection's.",
    "schema": "Schema; default: the connection's.",
    "objectName": "Object name, optionally qualified (DB.SCHEMA.NAME); functions/procedures as NAME(ARG_TYPES).",
}
Cause = Annotated[
    str | None, Field(max_length=500, description="Why the agent runs this (recorded in the audit trail).")
]


class SnowflakeTools:
    def __init__(self, rt: SnowflakeRuntime):
        self.rt = rt

    @tool(READ_ONLY_OPEN_WORLD)
    def execute_sql(self, query: Query, connection: Connection = None) -> QueryAnswer:
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
        _, proxy = self.rt.services(connection)
        return self.rt.audited("execute_sql", {"query": query}, connection, lambda: proxy.execute_sql(query))

    @tool(READ_ONLY_OPEN_WORLD)
    def execute_scalar(
        self,
        query: Query,
        connection: Connection = None,
        limit: Annotated[int, Field(ge=1, le=100_000, description="Max rows to return.")] = 100,
    ) -> ScalarAnswer:
        """Run a metadata or counting query and return its values (at most `limit` rows, capped by
        guardrail.maxScalarRows). A statement that would return row values is reclassified (the spec's
        QUERY_CLASSIFIED): the answer is the redacted, schema-only response of execute_sql with
        `reclassified: true`, `error: "QUERY_CLASSIFIED"` and `code: "E1002"`, never the values."""
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
        objectType: Annotated[ObjectType, Field(description="Kind of object to list.")],
        database: Database = None,
        schema: Schema = None,
        like: Annotated[
            str | None, Field(max_length=255, description="SQL LIKE pattern on the name.")
        ] = None,
        connection: Connection = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> ObjectList:
        """List objects of a type (`snow object list`, or SHOW for kinds the CLI lacks), scoped to a database
        or schema. `objects` lists them as Snowflake's SHOW rows (with `count`, `truncated`); excluded objects
        and people's details are removed. Paged (limit, cursor -> next_cursor; docs/PAGING.md); `like` is the
        name filter."""
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
        objectType: Annotated[ObjectType, Field(description="Kind of object.")],
        objectName: ObjectName,
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
    ) -> ObjectDescription:
        """Detailed metadata of one object (`snow object describe`) as `metadata` rows: columns with types,
        nullability, defaults and comments for tables and views; properties for other kinds."""
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
        """The DDL that recreates an object (GET_DDL), as the text content of the answer (SQL, ready for a
        .sql file); the structured content carries `ddl`, `source` and `note`. Where GET_DDL is unavailable
        the DDL is rebuilt from INFORMATION_SCHEMA: `source` says which (`get_ddl` | `information_schema`)
        and `note` explains."""
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
        objectType: Annotated[Literal["table", "view"], Field(description="table or view.")],
        database: Database = None,
        schema: Schema = None,
        direction: Annotated[
            Literal["upstream", "downstream", "both"], Field(description="Which side to traverse.")
        ] = "both",
        connection: Connection = None,
        depth: Annotated[int | None, Field(ge=1, le=100, description="Hops; null = all.")] = None,
        limit: GraphLimit = None,
        cursor: Cursor = None,
        detail: Detail = "full",
    ) -> LineageAnswer:
        """Upstream/downstream dependencies of a table or view (OBJECT_DEPENDENCIES; where unavailable,
        sqlglot over view definitions - `source` and `note` say so). `lineage` lists the edges as
        OBJECT_DEPENDENCIES rows (REFERENCED_* / REFERENCING_*, as the spec returns them); `nodes` carry hop
        distance and side, `edges` the same edges as from/to names. Nodes are paged nearest first, each page
        with its edges (limit, cursor -> next_cursor; docs/PAGING.md); detail=summary answers only `summary`
        (nodes per distance and per type) with empty lists."""
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
        objectType: Annotated[
            Literal["view", "materialized_view", "function", "procedure"],
            Field(description="Kind of object."),
        ],
        database: Database = None,
        schema: Schema = None,
        connection: Connection = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> DependenciesAnswer:
        """The objects a view, materialized view, function or procedure reads directly: `dependencies` items
        carry REFERENCE_OBJECT_NAME / REFERENCE_OBJECT_TYPE (the spec's columns) next to name/type. Paged
        (limit, cursor -> next_cursor; docs/PAGING.md)."""
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
                description="Repository root: the configured sync root or a folder inside it; "
                "default: snowflake.sync.target_dir.",
            ),
        ] = None,
        includeDatabases: Annotated[bool, Field(description="Write src/{DB}/_database.sql.")] = True,
        includeSchemas: Annotated[bool, Field(description="Write src/{DB}/{SCHEMA}/_schema.sql.")] = True,
        includeTables: Annotated[bool, Field(description="Write tables/{T}.sql.")] = True,
        includeViews: Annotated[bool, Field(description="Write views/{V}.sql.")] = True,
        includeFunctions: Annotated[bool, Field(description="Write functions/{F}.sql.")] = False,
        includeProcedures: Annotated[bool, Field(description="Write procedures/{P}.sql.")] = False,
        includeStages: Annotated[bool, Field(description="Write stages/{S}.sql.")] = False,
        includeTasks: Annotated[bool, Field(description="Write tasks/{T}.sql.")] = False,
        databases: Annotated[
            list[str] | None,
            Field(
                max_length=100,
                description="Only these databases; default: the configured list, "
                "else every visible database.",
            ),
        ] = None,
        cause: Cause = None,
    ) -> SyncAnswer:
        """Build the local DDL repository: src/{DB}/{SCHEMA}/tables|views|functions/{NAME}.sql, _database.sql,
        _schema.sql and .object-repository.json (sha256 per object). Excluded objects are never written.
        Runs as an audited Dagster run; syncing into the configured root also refreshes the store's
        repository snapshot (which extends exclusion checks through views). Answers the spec's `synced` and
        `results` [{type, name, path, status}], with `written` / `unchanged` / `removed` counts."""
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
        objectName: Annotated[
            str, Field(min_length=1, max_length=1000, description="Object name (DB.SCHEMA.NAME).")
        ],
        objectType: Annotated[
            str, Field(max_length=40, description="table, view, schema, database, function, ...")
        ],
        localPath: Annotated[
            str | None,
            Field(
                max_length=4096,
                description="The synced .sql file (relative to the repository root); default: "
                "the file the repository index records for the object.",
            ),
        ] = None,
        connection: Connection = None,
    ) -> StalenessAnswer:
        """Compare a synced DDL file with the object's current DDL: `isStale` when their hashes differ
        (`localHash`, `remoteHash` and the DDL `source` are returned too)."""
        return self.rt.staleness(objectName, objectType, localPath, connection)

    @tool(DESTRUCTIVE)
    def execute_ddl(
        self,
        ddl: Annotated[
            str, Field(min_length=1, max_length=100_000, description="CREATE/ALTER/DROP statement")
        ],
        connection: Connection = None,
        cause: Cause = None,
    ) -> DdlResult:
        """Run one CREATE / ALTER / DROP / UNDROP / COMMENT statement as an audited Dagster run. No row data is
        returned. Kinds are an allow-list (tables, views, schemas, databases, sequences, file formats, tags,
        streams, internal stages; tasks, alerts, procedures and SQL functions whose bodies are checked as
        statements): integrations, users, roles, grants, shares, policies, stages with URLs and task resumes are
        DDL_KIND_REFUSED; bodies running EXECUTE IMMEDIATE, CALL, EXECUTE TASK or unloads, or in another language,
        are DDL_BODY_REFUSED. Refused too: excluded objects, DML, procedures/scripts, unloads, temporary objects
        and anything reading an earlier result (SESSION_STATE_REFUSED), and (unless
        guardrail.allowDdlWithQueries) CREATE ... AS SELECT."""
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
