"""warehouse: schema, drift, freshness and bounded read-only queries on DuckDB, Snowflake, BigQuery (spec
category 2).

Cached (from the store, with provenance): warehouse_get_schema, warehouse_detect_schema_drift,
warehouse_check_freshness (for tables Dagster tracks; others are checked live). Live (each an audited
Dagster run, provenance source "live"): warehouse_execute, warehouse_explain_query,
warehouse_detect_duplicates, warehouse_get_query_history. Spec tools that return a list return an object
here, the list under a named key next to totals and provenance.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastmcp import FastMCP
from pydantic import Field

from ade_platform.clients.warehouses import WarehouseClient, WarehouseError, open_client
from ade_platform.lib.live_observations import (
    newer_freshness,
    newer_table,
    observed_table,
    schema_with_observations,
)
from ade_platform.lib.warehouse import drift, freshness, manifest
from ade_platform.lib.warehouse import schema as wschema
from ade_platform.lib.warehouse.names import freshness_asset, schema_asset
from ade_platform.lib.warehouse.types import is_temporal
from ade_platform.store import Snapshot, SnapshotNotFound
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD, new_toolset
from mcp_bridge.toolsets.dbt.inputs import DbtInputs, derive
from mcp_bridge.toolsets.schemas.batch import deferred_schemas_of
from mcp_bridge.toolsets.schemas.warehouse import (
    DriftAnswer,
    DuplicatesAnswer,
    ExecuteAnswer,
    ExplainAnswer,
    FreshnessAnswer,
    QueryHistoryAnswer,
    WarehouseSchemaAnswer,
)

HISTORY_ROWS = 100
# Live-read failures that mean "cannot observe now" (fall back to the snapshot), not "bad question".
UNREACHABLE = frozenset(
    {"connection_failed", "query_timeout", "auth_failed", "permission_denied", "query_failed"}
)
LIVE_VERSION = "live"
MAX_SCHEMA_COLUMNS = 5000
Sql = Annotated[str, Field(min_length=1, max_length=100_000, description="One read-only SQL query.")]
WarehouseName = Annotated[
    str | None,
    Field(
        max_length=128,
        description="A configured warehouse name (or its type: duckdb, snowflake, bigquery); "
        "default: the first configured warehouse.",
    ),
]
TableName = Annotated[
    str,
    Field(min_length=1, max_length=1024, description="Table name: database.schema.table or schema.table."),
]


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset(
        "warehouse",
        "Warehouse schema, drift, freshness and bounded read-only queries (DuckDB, Snowflake, BigQuery). "
        "Schema and drift answer from Dagster's snapshots; queries run live as audited Dagster runs.",
    )
    # every tool's output schema, built in one pydantic pass when a tool's schemas are not cached yet
    published = deferred_schemas_of(
        ExecuteAnswer,
        WarehouseSchemaAnswer,
        DriftAnswer,
        FreshnessAnswer,
        QueryHistoryAnswer,
        ExplainAnswer,
        DuplicatesAnswer,
    )
    settings = ctx.settings
    inputs = DbtInputs(ctx)
    clients: dict[str, WarehouseClient] = {}
    lock = threading.Lock()

    def pick(name: str | None) -> tuple[str, Any]:
        configured = settings.warehouses
        if not configured:
            raise ToolFailure("connection_failed", "no warehouse is configured (warehouses: in ade.yaml)")
        if name is None:
            first = next(iter(configured))
            return first, configured[first]
        if name in configured:
            return name, configured[name]
        by_type = [n for n, wh in configured.items() if wh.type == name]
        if len(by_type) == 1:
            return by_type[0], configured[by_type[0]]
        raise ToolFailure("invalid_argument", f"no warehouse {name!r}; configured: {', '.join(configured)}")

    def client(name: str) -> WarehouseClient:
        with lock:
            if name not in clients:
                clients[name] = open_client(settings, name)
            return clients[name]

    def live(tool: str, arguments: dict[str, Any], fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Run fn as an audited Dagster op (a WarehouseError is the structured error: the middleware maps it)."""
        # Every warehouse live tool is read-only (the SQL guard refused anything else before this point).
        dialect = getattr(settings.warehouses.get(arguments.get("warehouse", "")), "type", None)
        result = ctx.live().run(tool, fn, arguments=arguments, effects="none", dialect=dialect)
        return {**result.value, "provenance": result.stamp()}

    def schema_snapshot(name: str) -> Snapshot:
        return ctx.reader.latest(schema_asset(name))

    def split(table_name: str) -> list[str]:
        try:
            return wschema.split_name(table_name)
        except ValueError as exc:
            raise ToolFailure("invalid_argument", str(exc)) from None

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[ExecuteAnswer])
    def warehouse_execute(
        sql: Sql,
        warehouse: WarehouseName = None,
        limit: Annotated[int, Field(ge=1, le=100_000, description="Maximum rows to return.")] = 1000,
    ) -> dict[str, Any]:
        """Run one read-only SQL query and return its rows (a live, audited Dagster run).

        A LIMIT is applied on the parsed query when it has none (or a larger one); `limit_applied` says
        so and `truncated` says more rows existed. `limit` is capped at limits.max_rows (default 1000):
        `limit_requested` is what was asked, `limit` what was applied, `limit_capped` whether it was cut. Writes, DDL and multi-statement batches are refused
        with dml_not_permitted before anything runs. `bytes_processed` is set for BigQuery.
        """
        from ade_platform.lib.warehouse.sql import prepare_select

        name, wh = pick(warehouse)
        bound = min(limit, settings.limits.max_rows)
        prepared = prepare_select(sql, wh.type, bound)
        wc = client(name)

        def run() -> dict[str, Any]:
            started = time.perf_counter()
            result = wc.query(prepared.sql, max_rows=prepared.fetch)
            elapsed = (time.perf_counter() - started) * 1000
            rows = result.rows[:bound]
            return {
                "rows": rows,
                "row_count": len(rows),
                "columns": result.columns,
                "elapsed_ms": round(elapsed, 1),
                "bytes_processed": result.bytes_processed,
                "warehouse": name,
                "warehouse_type": wh.type,
                "limit": bound,
                "limit_requested": limit,
                "limit_capped": limit > bound,
                "limit_applied": prepared.limit_applied,
                "truncated": len(result.rows) > bound,
            }

        return live("warehouse_execute", {"sql": sql, "warehouse": name, "limit": bound}, run)

    def observe_table(
        tool: str, name: str, parts: list[str], arguments: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, Any, str | None]:
        """One table read live (one catalog query, audited like every live read).

        Returns (table or None when it does not exist, the LiveResult, None), or (None, None, error code)
        when the warehouse cannot be read now: the caller then falls back to the snapshot and says so.
        """
        wc = client(name)

        def run() -> dict[str, Any] | None:
            try:
                return wc.describe_table(parts)
            except WarehouseError as exc:
                if exc.code == "table_not_found":
                    return None  # an observation: the table is not there now
                raise

        try:
            result = ctx.live().run(tool, run, arguments=arguments, effects="none")
        except WarehouseError as exc:
            if exc.code in UNREACHABLE:
                return None, None, exc.code
            raise
        return ctx.observed(tool, result.value, warehouse=name, parts=parts), result, None

    def optional_snapshot(name: str) -> Snapshot | None:
        try:
            return schema_snapshot(name)
        except SnapshotNotFound:
            return None

    def live_stamp(result: Any, snapshot: Snapshot | None) -> dict[str, Any]:
        stamp = {**result.stamp(), "stale": False, "stale_reason": None}
        if snapshot is not None:  # what `since` (history) was read from
            stamp["history"] = {
                "asset": snapshot.asset,
                "version": snapshot.version,
                "materialized_at": snapshot.provenance.materialized_at,
            }
        return stamp

    def fallback(
        snapshot: Snapshot | None, code: str, body: dict[str, Any], seen: Any = None
    ) -> dict[str, Any]:
        if snapshot is None:
            raise ToolFailure(
                code, f"the warehouse cannot be read now ({code}) and no schema snapshot exists"
            )
        answer = ctx.cached_answer(
            snapshot,
            body,
            stale_reason=f"the warehouse could not be read live ({code}); answered from the "
            "latest schema snapshot, which may miss changes made since",
            observations=seen,
        )
        answer["provenance"]["live_error"] = code
        return answer

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[WarehouseSchemaAnswer])
    def warehouse_get_schema(
        schema_name: Annotated[
            str, Field(min_length=1, max_length=512, description="The schema, optionally database.schema.")
        ],
        table_name: Annotated[
            str | None, Field(max_length=512, description="One table of the schema; default: all tables.")
        ] = None,
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """Columns of a schema or one table as INFORMATION_SCHEMA.COLUMNS reports them (names, ordinal
        positions, types, nullability, defaults, lengths, precision). One table is read live (one catalog
        query, provenance source "live"), falling back to the latest schema snapshot, flagged stale with the
        error code, when the warehouse is unreachable; a whole schema comes from the snapshot."""
        name, _ = pick(warehouse)
        parts = split(schema_name)
        if table_name is not None and len(parts) <= 2:
            args = {"schema_name": schema_name, "table_name": table_name, "warehouse": name}
            table, result, error = observe_table("warehouse_get_schema", name, [*parts, table_name], args)
            if error is None:
                if table is None:
                    raise ToolFailure(
                        "table_not_found", f"no table {table_name!r} in schema {schema_name!r} (checked live)"
                    )
                body = wschema.schema_view({"tables": [table]}, parts, table_name, MAX_SCHEMA_COLUMNS)
                return {**body, "warehouse": name, "provenance": live_stamp(result, None)}
            snapshot = optional_snapshot(name)
            if snapshot is None:
                raise ToolFailure(error, f"warehouse '{name}' cannot be read now and has no schema snapshot")
            data, seen = schema_with_observations(ctx.reader, name, snapshot)  # newer live reads win
            body = wschema.schema_view(data, parts, table_name, MAX_SCHEMA_COLUMNS)
            return fallback(snapshot, error, {**body, "warehouse": name}, seen)
        snapshot = schema_snapshot(name)
        data, seen = schema_with_observations(ctx.reader, name, snapshot)
        body = wschema.schema_view(data, parts, table_name, MAX_SCHEMA_COLUMNS)
        return ctx.cached_answer(snapshot, {**body, "warehouse": name}, observations=seen)

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[DriftAnswer])
    def warehouse_detect_schema_drift(
        model_name: Annotated[str, Field(min_length=1, max_length=512, description="The dbt model name.")],
        manifest_path: Annotated[
            str | None,
            Field(
                max_length=4096,
                description="Path to manifest.json (inside the dbt project, the target path or ADE_HOME); "
                "default: the latest manifest snapshot.",
            ),
        ] = None,
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """Columns the dbt manifest declares for a model vs the columns the warehouse has now: added,
        removed, type changed (types normalized per warehouse: TEXT = VARCHAR, INT = NUMBER(38,0)),
        likely renames, and for each change `since`: the schema snapshot version that first showed it
        ("live" when no snapshot has it yet). The table is read live (one catalog query); when the
        warehouse is unreachable the answer comes from the latest snapshot, flagged stale with the code."""
        name, wh = pick(warehouse)
        snapshot = optional_snapshot(name)
        manifest_snap = inputs.artifact("manifest", manifest_path)
        catalog_snap = inputs.optional("catalog", _sibling_catalog(manifest_path))
        key = f"warehouse_relations:{catalog_snap.version if catalog_snap else '-'}"
        rels = derive(
            manifest_snap,
            key,
            lambda s: manifest.relations(s.data, catalog_snap.data if catalog_snap else None),
        )
        project = (manifest_snap.data.get("metadata") or {}).get("project_name")
        relation, suggestions = manifest.find_model(rels, model_name, project)
        if relation is None:
            hint = f"Did you mean: {', '.join(suggestions)}?" if suggestions else None
            raise ToolFailure("model_not_found", f"no model {model_name!r} in the manifest", hint)
        # DuckDB's catalog is a file name that dbt and the platform may spell differently: schema.table.
        parts = [relation.schema, relation.identifier]
        if relation.database and wh.type != "duckdb":
            parts.insert(0, relation.database)
        args = {"model_name": model_name, "warehouse": name}
        live_table, result, error = observe_table("warehouse_detect_schema_drift", name, parts, args)
        checked_at = freshness.iso(datetime.now(UTC))
        seen = None
        if error is not None:
            if snapshot is None:
                raise ToolFailure(error, f"warehouse '{name}' cannot be read now and has no schema snapshot")
            # An earlier live read of the table (any agent's) is newer than the snapshot: it wins.
            seen = newer_table(ctx.reader, name, relation.schema, relation.identifier, snapshot)
            live_table = observed_table(seen) if seen else None
            table = live_table if seen else _relation_table(snapshot, relation)
        else:
            table = live_table
        report = drift.compare(relation, table, wh.type)
        if report["drift_detected"] and snapshot is not None:
            history = [
                drift.SnapshotRef(p.version, p.materialized_at)
                for p in reversed(ctx.reader.history(snapshot.asset))
            ]
            history = [h for h in history if h.version <= snapshot.version] or [
                drift.SnapshotRef(snapshot.version, snapshot.provenance.materialized_at)
            ]
            if error is None or seen:  # the live observation is the newest state; snapshots say since when
                history.insert(0, drift.SnapshotRef(LIVE_VERSION, seen.observed_iso if seen else checked_at))

            def table_at(version: str) -> dict[str, Any] | None:
                if version == LIVE_VERSION:
                    return live_table
                snap = snapshot if version == snapshot.version else ctx.reader.get(snapshot.asset, version)
                return _relation_table(snap, relation)

            drift.since_when(report, history, table_at, wh.type)
        report["checked_at"] = checked_at
        report["observed_at"] = (
            checked_at
            if error is None
            else seen.observed_iso
            if seen
            else snapshot.provenance.materialized_at
        )
        report["declared_in"] = {"asset": manifest_snap.asset, "version": manifest_snap.version}
        report["warehouse"] = name
        if error is not None:
            return fallback(snapshot, error, report, [seen] if seen else None)
        return {**report, "provenance": live_stamp(result, snapshot)}

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[FreshnessAnswer])
    def warehouse_check_freshness(
        table_name: TableName,
        timestamp_column: Annotated[
            str, Field(min_length=1, max_length=512, description="A DATE, TIMESTAMP or DATETIME column.")
        ],
        freshness_threshold_hours: Annotated[
            float, Field(gt=0, le=24 * 3650, description="Hours after which the table counts as stale.")
        ] = 24.0,
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """The newest value of a timestamp column, how many hours old it is, and whether that is within
        the threshold. Answers from Dagster's freshness snapshot for tracked tables, else live
        (SELECT MAX(column)). An empty table gives max_timestamp null and is_fresh false."""
        name, wh = pick(warehouse)
        snapshot = schema_snapshot(name)
        parts = split(table_name)
        table = wschema.resolve_table(_index(snapshot), parts, table_name)
        column = wschema.find_column(table, timestamp_column)
        if column is None:
            names = ", ".join(c["name"] for c in table["columns"][:30])
            raise ToolFailure(
                "column_not_found",
                f"{table_name} has no column {timestamp_column!r}",
                f"Its columns: {names}",
            )
        if not is_temporal(column["type"], wh.type):
            raise ToolFailure(
                "invalid_argument", f"{timestamp_column} is {column['type']}, not a DATE or TIMESTAMP column"
            )
        tracked = _tracked_freshness(ctx, name, table, column["name"])
        if tracked is not None:
            fresh_snap, entry = tracked
            seen = newer_freshness(
                ctx.reader, name, table, column["name"], fresh_snap
            )  # a newer live check wins
            body = freshness.freshness_answer(
                table_name, column["name"], seen.state["max_timestamp"] if seen else entry["max_timestamp"],
                freshness_threshold_hours, datetime.now(UTC), entry.get("row_count"),
            )  # fmt: skip
            body["observed_at"] = seen.observed_iso if seen else fresh_snap.provenance.materialized_at
            return ctx.cached_answer(fresh_snap, body, observations=[seen] if seen else None)
        from ade_platform.lib.warehouse.sql import max_timestamp_sql

        parts = [p for p in (table.get("database"), table["schema"], table["name"]) if p]
        sql = max_timestamp_sql(parts, column["name"], wh.type)
        wc = client(name)

        def run() -> dict[str, Any]:
            row = wc.query(sql, max_rows=1).rows[0]
            values = list(row.values())
            return freshness.freshness_answer(
                table_name, column["name"], values[0], freshness_threshold_hours, datetime.now(UTC), values[1]
            )

        args = {"table_name": table_name, "timestamp_column": timestamp_column, "warehouse": name}
        return ctx.observed(
            "warehouse_check_freshness",
            live("warehouse_check_freshness", args, run),
            warehouse=name,
            table=table,
        )

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[QueryHistoryAnswer])
    def warehouse_get_query_history(
        table_pattern: Annotated[
            str,
            Field(min_length=1, max_length=512, description="Table name or SQL LIKE pattern, e.g. %orders%."),
        ],
        lookback_days: Annotated[int, Field(ge=1, le=30, description="Days back to search (max 30).")] = 7,
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """Recent queries that mention a table (Snowflake ACCOUNT_USAGE.QUERY_HISTORY, BigQuery
        INFORMATION_SCHEMA.JOBS), newest first, at most 100; literals are stripped from the query text.
        DuckDB keeps no query history (not_implemented)."""
        name, wh = pick(warehouse)
        if wh.type == "duckdb":
            raise ToolFailure(
                "not_implemented",
                f"warehouse '{name}' is DuckDB, which keeps no query history",
                "Use a Snowflake or BigQuery warehouse for query history.",
            )
        pattern = table_pattern if any(ch in table_pattern for ch in "%_") else f"%{table_pattern}%"
        wc = client(name)

        def run() -> dict[str, Any]:
            queries = wc.query_history(pattern, lookback_days, HISTORY_ROWS)
            return {
                "queries": queries,
                "total_returned": len(queries),
                "lookback_days": lookback_days,
                "warehouse": name,
            }

        args = {"table_pattern": table_pattern, "lookback_days": lookback_days, "warehouse": name}
        return live("warehouse_get_query_history", args, run)

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[ExplainAnswer])
    def warehouse_explain_query(sql: Sql, warehouse: WarehouseName = None) -> dict[str, Any]:
        """The execution plan of a read-only query without running it: DuckDB plan tree, Snowflake
        EXPLAIN USING TEXT, BigQuery dry run (with the bytes it would process)."""
        from ade_platform.lib.warehouse.sql import prepare_explain

        name, wh = pick(warehouse)
        statement = prepare_explain(sql, wh.type)
        wc = client(name)

        def run() -> dict[str, Any]:
            return {**wc.explain(statement), "warehouse": name}

        return live("warehouse_explain_query", {"sql": sql, "warehouse": name}, run)

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[DuplicatesAnswer])
    def warehouse_detect_duplicates(
        table_name: TableName,
        key_columns: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=512)]],
            Field(min_length=1, max_length=32, description="Columns that together should be unique."),
        ],
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """Rows sharing a key that should be unique: totals, duplication rate, severity (low < 0.1 %,
        medium 0.1-1 %, high > 1 %) and up to 5 sample duplicates. Rows with a NULL key are not counted."""
        from ade_platform.lib.warehouse.duplicates import MAX_SAMPLES, duplicates_answer
        from ade_platform.lib.warehouse.sql import duplicate_sample_sql, duplicate_summary_sql

        name, wh = pick(warehouse)
        parts = split(table_name)
        if len({k.lower() for k in key_columns}) != len(key_columns):
            raise ToolFailure("invalid_argument", "key_columns repeats a column")
        wc = client(name)

        def run() -> dict[str, Any]:
            resolved = wc.resolve_table(parts)
            known = {c["name"].lower(): c["name"] for c in resolved.columns}
            missing = [k for k in key_columns if k.lower() not in known]
            if missing:
                raise WarehouseError(
                    "column_not_found", f"{table_name} has no column(s) {', '.join(map(repr, missing))}"
                )
            keys = [known[k.lower()] for k in key_columns]
            row = wc.query(duplicate_summary_sql(resolved.parts, keys, wh.type), max_rows=1).rows[0]
            summary = {k.lower(): v for k, v in row.items()}
            samples = []
            if summary.get("duplicate_key_count"):
                samples = wc.query(duplicate_sample_sql(resolved.parts, keys, wh.type, MAX_SAMPLES)).rows
            return {**duplicates_answer(table_name, keys, summary, samples), "warehouse": name}

        args = {"table_name": table_name, "key_columns": key_columns, "warehouse": name}
        return live("warehouse_detect_duplicates", args, run)

    return server


def _sibling_catalog(manifest_path: str | None) -> str | None:
    """With an explicit manifest, the catalog.json next to it (if any) types its columns."""
    if manifest_path is None:
        return None
    candidate = Path(manifest_path).with_name("catalog.json")
    return str(candidate) if candidate.exists() else None


def _index(snapshot: Snapshot) -> dict[str, list[dict[str, Any]]]:
    return snapshot.derived("table_index", lambda s: wschema.index_tables(s.data))


def _relation_table(snapshot: Snapshot, relation: manifest.Relation) -> dict[str, Any] | None:
    return wschema.relation_table(_index(snapshot), relation.schema, relation.identifier, relation.database)


def _tracked_freshness(
    ctx: BridgeContext, name: str, table: dict[str, Any], column: str
) -> tuple[Snapshot, dict[str, Any]] | None:
    try:
        snap = ctx.reader.latest(freshness_asset(name))
    except SnapshotNotFound:
        return None
    for entry in snap.data.get("tables", []):
        if (
            entry.get("schema", "").lower() == table["schema"].lower()
            and entry.get("name", "").lower() == table["name"].lower()
            and entry.get("column", "").lower() == column.lower()
            and not entry.get("error")
        ):
            return snap, entry
    return None
