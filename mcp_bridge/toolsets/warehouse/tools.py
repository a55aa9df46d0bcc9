"""The warehouse tools: each public method of WarehouseTools is one tool, its signature and docstring the
published ones; what they do beyond their parameters is in service.py."""

from __future__ import annotations

import sys
import time
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from ade_platform.clients.warehouses import WarehouseError
from ade_platform.lib import paging
from ade_platform.lib.live_observations import newer_freshness, schema_with_observations
from ade_platform.lib.warehouse import freshness
from ade_platform.lib.warehouse import schema as wschema
from ade_platform.lib.warehouse.types import is_temporal
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD, tool
from mcp_bridge.toolsets.schemas.paging import Cursor, Limit
from mcp_bridge.toolsets.schemas.warehouse import (
    DriftAnswer,
    DuplicatesAnswer,
    ExecuteAnswer,
    ExplainAnswer,
    FreshnessAnswer,
    QueryHistoryAnswer,
    WarehouseSchemaAnswer,
)
from mcp_bridge.toolsets.warehouse.service import WarehouseService, split, table_index, unreadable

MASK = "<masked>"  # as bi_run_look masks
HISTORY_ROWS = paging.MAX_LIMIT  # the newest queries read per call, paged
MAX_SCHEMA_COLUMNS = 5000  # columns per page of a whole schema
Sql = Annotated[str, Field(min_length=1, max_length=100_000, description="One read-only query.")]
WarehouseName = Annotated[
    str | None,
    Field(
        max_length=128,
    ),
]

# Parameters several tools take: described once, in the instructions (new_toolset), not in each input schema.
PARAMETERS = {
    "warehouse": "A configured warehouse's name or type (duckdb, snowflake, bigquery); default: the first.",
}
TableName = Annotated[
    str,
    Field(min_length=1, max_length=1024, description="[database.]schema.table"),
]


class WarehouseTools:
    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.service = WarehouseService(ctx)

    @tool(READ_ONLY_OPEN_WORLD, answer=ExecuteAnswer)
    def warehouse_execute(
        self,
        sql: Sql,
        warehouse: WarehouseName = None,
        limit: Annotated[int, Field(ge=1, le=100_000)] = 1000,
    ) -> dict[str, Any]:
        """Run one read-only SQL query on a warehouse and return its rows (live, audited). A LIMIT is applied
        (at most limits.max_rows). Writes, DDL and excluded tables are refused; personal-data columns come back
        masked."""
        from ade_platform.lib.sql_protect import mask_rows, protected_outputs
        from ade_platform.lib.warehouse.sql import parse_read_only, prepare_select

        name, wh = self.service.pick(warehouse)
        bound = min(limit, self.ctx.settings.limits.max_rows)
        prepared = prepare_select(sql, wh.type, bound)
        # checked on the statement that runs: the SQL generated from the checked AST, parsed again
        statement = parse_read_only(prepared.sql, wh.type)
        rules, schema, default_schema = self.service.protection(name)
        self.service.refuse_excluded(statement, rules)
        wc = self.service.client(name)

        def run() -> dict[str, Any]:
            started = time.perf_counter()
            result = wc.query(prepared.sql, max_rows=prepared.fetch)
            elapsed = (time.perf_counter() - started) * 1000
            protected = protected_outputs(statement, wh.type, rules, result.columns, schema, default_schema)
            rows = mask_rows(result.rows[:bound], protected, MASK)
            return {
                "rows": rows,
                "masked_columns": [{"column": c, "reason": r} for c, r in protected.items()],
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

        return self.service.live(
            "warehouse_execute", name, {"sql": sql, "warehouse": name, "limit": bound}, run
        )

    @tool(READ_ONLY_OPEN_WORLD, answer=WarehouseSchemaAnswer)
    def warehouse_get_schema(
        self,
        schema_name: Annotated[str, Field(min_length=1, max_length=512, description="[database.]schema")],
        table_name: Annotated[str | None, Field(max_length=512, description="Default: every table.")] = None,
        warehouse: WarehouseName = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Columns of a warehouse table or schema from INFORMATION_SCHEMA: types, nullability, defaults. One
        table is read live (else the snapshot, flagged stale); a whole schema comes from the snapshot, paged by
        table."""
        service = self.service
        name, _ = service.pick(warehouse)
        parts = split(schema_name)
        if table_name is not None and len(parts) <= 2:
            args = {"schema_name": schema_name, "table_name": table_name, "warehouse": name}
            table, provenance, error = service.read_table(
                "warehouse_get_schema", name, [*parts, table_name], args
            )
            if error is None:
                if table is None:
                    raise ToolFailure(
                        "table_not_found", f"no table {table_name!r} in schema {schema_name!r} (checked live)"
                    )
                body = wschema.schema_view({"tables": [table]}, parts, table_name, MAX_SCHEMA_COLUMNS)
                return {**body, "warehouse": name, "provenance": service.live_provenance(provenance, None)}
            snapshot = service.optional_schema_snapshot(name)
            if snapshot is None:
                raise unreadable(name, error)
            data, seen = schema_with_observations(self.ctx.reader, name, snapshot)  # newer live reads win
            body = wschema.schema_view(data, parts, table_name, sys.maxsize)
            return service.fallback(snapshot, error, {**body, "warehouse": name}, seen)
        snapshot = service.schema_snapshot(name)
        data, seen = schema_with_observations(self.ctx.reader, name, snapshot)
        body = wschema.schema_view(data, parts, table_name, sys.maxsize)
        if table_name is None:
            body = _page_of_tables(body, limit, cursor, ("warehouse_get_schema", name, schema_name.lower()))
        return self.ctx.cached_answer(snapshot, {**body, "warehouse": name}, observations=seen)

    @tool(READ_ONLY_OPEN_WORLD, answer=DriftAnswer)
    def warehouse_detect_schema_drift(
        self,
        model_name: Annotated[str, Field(min_length=1, max_length=512)],
        manifest_path: Annotated[
            str | None,
            Field(
                max_length=4096,
                description="Default: the latest manifest snapshot.",
            ),
        ] = None,
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """Schema drift of a dbt model: its declared columns vs the warehouse table now (added, removed,
        retyped, likely renamed). Each change names the snapshot that first showed it; read live, snapshot as
        fallback."""
        name, wh = self.service.pick(warehouse)
        return self.service.drift(name, wh.type, model_name, manifest_path)

    @tool(READ_ONLY_OPEN_WORLD, answer=FreshnessAnswer)
    def warehouse_check_freshness(
        self,
        table_name: TableName,
        timestamp_column: Annotated[str, Field(min_length=1, max_length=512)],
        freshness_threshold_hours: Annotated[float, Field(gt=0, le=24 * 3650)] = 24.0,
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """How old the newest value of a table's timestamp column is, and whether it is within a threshold in
        hours. From Dagster's freshness snapshot for tracked tables, else live."""
        name, wh = self.service.pick(warehouse)
        snapshot = self.service.schema_snapshot(name)
        parts = split(table_name)
        table = wschema.resolve_table(table_index(snapshot), parts, table_name)
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
        tracked = self.service.tracked_freshness(name, table, column["name"])
        if tracked is not None:
            fresh_snap, entry = tracked
            seen = newer_freshness(
                self.ctx.reader, name, table, column["name"], fresh_snap
            )  # a newer live check wins
            body = freshness.freshness_answer(
                table_name, column["name"], seen.state["max_timestamp"] if seen else entry["max_timestamp"],
                freshness_threshold_hours, datetime.now(UTC), entry.get("row_count"),
            )  # fmt: skip
            body["observed_at"] = seen.observed_iso if seen else fresh_snap.provenance.materialized_at
            return self.ctx.cached_answer(fresh_snap, body, observations=[seen] if seen else None)
        from ade_platform.lib.warehouse.sql import max_timestamp_sql

        parts = [p for p in (table.get("database"), table["schema"], table["name"]) if p]
        sql = max_timestamp_sql(parts, column["name"], wh.type)
        wc = self.service.client(name)

        def run() -> dict[str, Any]:
            row = wc.query(sql, max_rows=1).rows[0]
            values = list(row.values())
            return freshness.freshness_answer(
                table_name, column["name"], values[0], freshness_threshold_hours, datetime.now(UTC), values[1]
            )

        tool = "warehouse_check_freshness"
        args = {"table_name": table_name, "timestamp_column": timestamp_column, "warehouse": name}
        return self.ctx.observed(tool, self.service.live(tool, name, args, run), warehouse=name, table=table)

    @tool(READ_ONLY_OPEN_WORLD, answer=QueryHistoryAnswer)
    def warehouse_get_query_history(
        self,
        table_pattern: Annotated[
            str,
            Field(min_length=1, max_length=512, description="Name or LIKE pattern (%orders%)."),
        ],
        lookback_days: Annotated[int, Field(ge=1, le=30)] = 7,
        warehouse: WarehouseName = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict[str, Any]:
        """Recent queries that mention a table (Snowflake QUERY_HISTORY, BigQuery JOBS), newest first, literals
        stripped. Paged; table_pattern filters. DuckDB keeps none (not_implemented)."""
        name, wh = self.service.pick(warehouse)
        if wh.type == "duckdb":
            raise ToolFailure(
                "not_implemented",
                f"warehouse '{name}' is DuckDB, which keeps no query history",
                "Use a Snowflake or BigQuery warehouse for query history.",
            )
        pattern = table_pattern if any(ch in table_pattern for ch in "%_") else f"%{table_pattern}%"
        wc = self.service.client(name)

        def run() -> dict[str, Any]:
            queries = wc.query_history(pattern, lookback_days, HISTORY_ROWS)
            shown = paging.page(
                queries, limit, cursor, version=paging.live_version(queries, key=lambda q: q.get("query_id")),
                query=("warehouse_get_query_history", name, pattern, lookback_days),
                total=len(queries) if len(queries) < HISTORY_ROWS else None,
            )  # fmt: skip
            return {
                "queries": shown.items,
                "total_returned": len(shown.items),
                **shown.fields(),
                "lookback_days": lookback_days,
                "warehouse": name,
            }

        args = {"table_pattern": table_pattern, "lookback_days": lookback_days, "warehouse": name}
        return self.service.live("warehouse_get_query_history", name, args, run)

    @tool(READ_ONLY_OPEN_WORLD, answer=ExplainAnswer)
    def warehouse_explain_query(self, sql: Sql, warehouse: WarehouseName = None) -> dict[str, Any]:
        """The execution plan of a read-only query without running it (DuckDB plan, Snowflake EXPLAIN, BigQuery
        dry run with the bytes it would process)."""
        from ade_platform.lib.warehouse.sql import prepare_explain

        name, wh = self.service.pick(warehouse)
        statement = prepare_explain(sql, wh.type)
        wc = self.service.client(name)

        def run() -> dict[str, Any]:
            return {**wc.explain(statement), "warehouse": name}

        return self.service.live("warehouse_explain_query", name, {"sql": sql, "warehouse": name}, run)

    @tool(READ_ONLY_OPEN_WORLD, answer=DuplicatesAnswer)
    def warehouse_detect_duplicates(
        self,
        table_name: TableName,
        key_columns: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=512)]],
            Field(min_length=1, max_length=32),
        ],
        warehouse: WarehouseName = None,
    ) -> dict[str, Any]:
        """Duplicate rows on a key that should be unique: totals, duplication rate, severity and up to 5
        samples. Rows with a NULL key are not counted."""
        from ade_platform.lib.warehouse.duplicates import MAX_SAMPLES, duplicates_answer
        from ade_platform.lib.warehouse.sql import duplicate_sample_sql, duplicate_summary_sql

        name, wh = self.service.pick(warehouse)
        parts = split(table_name)
        if len({k.lower() for k in key_columns}) != len(key_columns):
            raise ToolFailure("invalid_argument", "key_columns repeats a column")
        wc = self.service.client(name)

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
        return self.service.live("warehouse_detect_duplicates", name, args, run)


def _page_of_tables(
    body: dict[str, Any], limit: int | None, cursor: str | None, query: tuple[Any, ...]
) -> dict[str, Any]:
    """A whole schema's page of tables; the version is the tables' names and column counts, so a cursor is
    refused once a table or column came or went."""
    tables = body["tables"]
    version = paging.live_version(tables, key=lambda t: (t["table_name"], t["column_count"]))
    budget = (lambda t: t["column_count"], MAX_SCHEMA_COLUMNS)
    shown = paging.page(tables, limit, cursor, version=version, query=query, budget=budget)
    return {**body, "tables": shown.items, **shown.fields()}
