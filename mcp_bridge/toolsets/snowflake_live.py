"""snowflake: the sync and DDL tools. sync_objects and execute_ddl run as audited ad-hoc Dagster ops."""

from __future__ import annotations

from typing import Annotated, Any

from fastmcp import FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field

from ade_platform.lib.snowflake.ddl import ddl_hash
from ade_platform.lib.snowflake.sync import SyncOptions, collect, read_index, write_repository
from ade_platform.store import StoreWriter
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD
from mcp_bridge.toolsets.schemas.snowflake import DdlResult, StalenessAnswer, SyncAnswer
from mcp_bridge.toolsets.snowflake_runtime import REPOSITORY_ASSET, SnowflakeRuntime, failures

DESTRUCTIVE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True
)
SYNC = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=True)
Connection = Annotated[
    str | None,
    Field(
        max_length=255, description="Connection name from the snow CLI config; default: the configured one."
    ),
]
Cause = Annotated[
    str | None, Field(max_length=500, description="Why the agent runs this (recorded in the audit trail).")
]


def register_live_tools(server: FastMCP, rt: SnowflakeRuntime) -> None:
    ctx = rt.ctx

    @server.tool(annotations=SYNC)
    def sync_objects(
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
        with failures():
            section = rt.settings()
            default_root = rt.sync_root().resolve()
            root = rt.confine(targetDir, default=default_root)
            dbs = tuple(databases or section.sync.databases)
            options = SyncOptions(
                include_databases=includeDatabases,
                include_schemas=includeSchemas,
                include_tables=includeTables,
                include_views=includeViews,
                include_functions=includeFunctions,
                include_procedures=includeProcedures,
                include_stages=includeStages,
                include_tasks=includeTasks,
                databases=dbs,
            )
            service, _ = rt.services(connection)
            name = rt.connection(connection)

            def work() -> dict[str, Any]:
                inventory = collect(service, options)
                summary = write_repository(root, inventory, connection=name, databases=list(dbs))
                if root == default_root:
                    index = read_index(root) or {}
                    StoreWriter(ctx.settings.store_root, retention=ctx.settings.store.retention).publish(
                        REPOSITORY_ASSET,
                        {**summary, **index},
                        source={"tool": "sync_objects", "connection": name},
                    )
                return summary

            args = {"connection": name, "targetDir": targetDir, "databases": list(dbs), **options.__dict__}
            result = ctx.live().run("sync_objects", work, arguments=args, cause=cause)
            summary = dict(result.value)
            index = read_index(root) or {}
            limit = ctx.settings.limits.max_rows
            results = [
                {"type": e["type"], "name": e["key"], "path": e["path"], "status": "synced"}
                for e in index.get("objects", [])[:limit]
            ]
            return {
                **summary,
                "targetDir": targetDir or "(configured root)",
                "results": results,
                "truncated": len(index.get("objects", [])) > limit,
                "provenance": result.stamp(),
            }

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    def check_staleness(
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
        with failures():
            service, _ = rt.services(connection)
            root = rt.sync_root().resolve()
            if localPath is None:
                obj = service.name(objectName, objectType, None, None)
                entries = (read_index(root) or {}).get("objects", [])
                match = [e for e in entries if e.get("key") == obj.display and e.get("type") == obj.kind.name]
                if not match:
                    raise ToolFailure(
                        "file_not_found",
                        "the repository index has no file for this object",
                        hint="Run sync_objects first, or pass localPath.",
                    )
                localPath = match[0]["path"]
            path = rt.confine(localPath, default=root)
            try:
                local_text = path.read_text(encoding="utf-8")
            except OSError:
                raise ToolFailure(
                    "file_not_found",
                    "the local DDL file does not exist",
                    hint="Run sync_objects first, or check localPath.",
                ) from None
            args = {"objectName": objectName, "objectType": objectType, "localPath": localPath}
            return rt.audited(
                "check_staleness",
                args,
                connection,
                lambda: _compare(service, objectType, objectName, localPath, local_text),
            )

    @server.tool(annotations=DESTRUCTIVE)
    def execute_ddl(
        ddl: Annotated[
            str, Field(min_length=1, max_length=100_000, description="CREATE/ALTER/DROP statement")
        ],
        connection: Connection = None,
        cause: Cause = None,
    ) -> DdlResult:
        """Run one CREATE / ALTER / DROP / UNDROP / COMMENT statement as an audited Dagster run. No row data is
        returned. Refused: excluded objects, DML, procedures/scripts, unloads, temporary objects and anything
        reading an earlier result (SESSION_STATE_REFUSED), and (unless guardrail.allowDdlWithQueries)
        CREATE ... AS SELECT."""
        with failures():
            _, proxy = rt.services(connection)
            classification = proxy.check_ddl(ddl)
            name = rt.connection(connection)
            result = ctx.live().run(
                "execute_ddl",
                lambda: proxy.run_ddl(ddl),
                arguments={"ddl": ddl, "connection": name},
                cause=cause,
                dialect="snowflake",
            )
            return {
                "success": True,
                "statement": classification.statement,
                "objects": classification.objects,
                "provenance": result.stamp(),
            }


def _compare(
    service: Any, object_type: str, object_name: str, local_path: str, local_text: str
) -> dict[str, Any]:
    remote = service.get_ddl(object_type, object_name, None, None)
    local_hash, remote_hash = ddl_hash(local_text), ddl_hash(remote["ddl"])
    return {
        "isStale": local_hash != remote_hash,
        "objectName": remote["objectName"],
        "objectType": remote["objectType"],
        "localPath": local_path,
        "localHash": local_hash,
        "remoteHash": remote_hash,
        "source": remote["source"],
        **({"note": remote["note"]} if remote.get("note") else {}),
    }
