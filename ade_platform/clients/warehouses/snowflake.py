"""Snowflake through snowflake-connector-python (tested against a local fakesnow server).

Credentials come from the settings at start-up (SecretStr) and go straight to the connector; they never
appear in errors, results or logs. Dagster passes a connection factory from dagster-snowflake's resource
instead, so assets and live tools share one code path.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from ade_platform.clients.warehouses.base import (
    QueryResult,
    ResolvedTable,
    ServiceWarehouseClient,
    WarehouseError,
    described_table,
    history_row,
    resolved_table,
    safe_message,
    to_dicts,
    unique_columns,
)
from ade_platform.lib.warehouse.schema import ColumnRow

_CONNECTION_ERRNOS = {250001, 250002, 250003, 251001, 251002, 251003, 251005, 251006, 251011}
_TIMEOUT_ERRNOS = {604, 630}
_BYTES_ASSIGNED = re.compile(r"bytesAssigned=(\d+)")
_ERRNO_PREFIX = re.compile(r"^\d{6} \(\w+\): ")
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_HISTORY_SQL = """
select query_id, query_text, user_name, start_time, end_time, total_elapsed_time, bytes_scanned,
       rows_produced, execution_status
from snowflake.account_usage.query_history
where start_time >= dateadd('day', -%(days)s, current_timestamp())
  and query_text ilike %(pattern)s
order by start_time desc
limit %(limit)s
"""


def connection_args(settings: Any, timeout: float) -> dict[str, Any]:
    """Connector arguments from a SnowflakeWarehouse settings model (password unwrapped here only)."""
    args: dict[str, Any] = {
        "account": settings.account,
        "user": settings.user,
        "database": settings.database,
        "warehouse": settings.warehouse,
        "role": settings.role,
        "login_timeout": max(5, min(int(timeout), 60)),
        "network_timeout": max(5, int(timeout) + 5),
        "application": "ADE_Platform",
        "session_parameters": {
            "QUERY_TAG": "ade-platform",
            "STATEMENT_TIMEOUT_IN_SECONDS": max(1, int(timeout)),
        },
    }
    if settings.password is not None:
        args["password"] = settings.password.get_secret_value()
    if settings.host:
        args["host"] = settings.host
    if settings.port:
        args["port"] = settings.port
    if settings.protocol != "https":
        args["protocol"] = settings.protocol
    return {k: v for k, v in args.items() if v is not None}


class SnowflakeClient(ServiceWarehouseClient):
    type = "snowflake"

    def __init__(
        self,
        name: str,
        settings: Any,
        timeout: float = 60,
        connection_factory: Callable[[], AbstractContextManager[Any]] | None = None,
    ):
        super().__init__(name, settings, timeout)
        self._factory = connection_factory

    @property
    def schemas(self) -> Sequence[str]:
        return tuple(self.settings.schemas)

    # -- connections --------------------------------------------------------------------------------
    def _error(self, exc: Exception, sql: str | None = None) -> WarehouseError:
        errno = getattr(exc, "errno", None)
        sqlstate = getattr(exc, "sqlstate", None)
        message = _ERRNO_PREFIX.sub("", getattr(exc, "raw_msg", None) or str(exc))
        if errno in _TIMEOUT_ERRNOS:
            return WarehouseError("query_timeout", f"the query exceeded {self.timeout:g}s and was cancelled")
        if errno in {390100, 390101, 390102, 390144}:
            return WarehouseError(
                "auth_failed", f"Snowflake rejected the credentials of warehouse '{self.name}'"
            )
        if errno in _CONNECTION_ERRNOS or type(exc).__name__ in ("OperationalError", "InterfaceError"):
            return WarehouseError(
                "connection_failed", f"cannot reach Snowflake for warehouse '{self.name}' (error {errno})"
            )
        return WarehouseError(
            "query_failed", f"Snowflake error {errno} ({sqlstate}): {safe_message(message, sql)}"
        )

    @contextmanager
    def connect(self) -> Iterator[Any]:
        import snowflake.connector

        if self._factory is not None:
            try:
                with self._factory() as conn:
                    yield conn
            except snowflake.connector.errors.Error as exc:
                raise self._error(exc) from None
            return
        with self._lock:
            if self._handle is None or self._handle.is_closed():
                try:
                    self._handle = snowflake.connector.connect(**connection_args(self.settings, self.timeout))
                except snowflake.connector.errors.Error as exc:
                    raise self._error(exc) from None
                except Exception:
                    raise WarehouseError(
                        "connection_failed", f"cannot reach Snowflake for warehouse '{self.name}'"
                    ) from None
            conn = self._handle
        yield conn

    def _execute(
        self, sql: str, params: dict[str, Any] | None = None, max_rows: int | None = None
    ) -> tuple[list[str], list[tuple], str | None]:
        import snowflake.connector

        with self.connect() as conn:
            cursor = conn.cursor()
            try:
                cursor.execute(sql, params, timeout=max(1, int(self.timeout)))
                columns = [d.name for d in cursor.description or []]
                rows = cursor.fetchmany(max_rows) if max_rows is not None else cursor.fetchall()
                return columns, list(rows), cursor.sfqid
            except snowflake.connector.errors.Error as exc:
                error = self._error(exc, sql)
                if error.code == "connection_failed":
                    self.close()
                raise error from None
            finally:
                cursor.close()

    # -- the contract ---------------------------------------------------------------------------------
    def query(
        self, sql: str, *, max_rows: int | None = None, params: dict[str, Any] | None = None
    ) -> QueryResult:
        columns, rows, query_id = self._execute(sql, params, max_rows)
        return QueryResult(unique_columns(columns), to_dicts(columns, rows), None, query_id)

    def explain(self, sql: str) -> dict[str, Any]:
        _, rows, _ = self._execute(f"EXPLAIN USING TEXT {sql}")
        plan = "\n".join(str(row[0]) for row in rows)
        match = _BYTES_ASSIGNED.search(plan)
        return {
            "plan_text": plan,
            "estimated_bytes_scanned": int(match.group(1)) if match else None,
            "estimated_cost_credits": None,
            "notes": "EXPLAIN USING TEXT output; bytes come from the GlobalStats line when present.",
        }

    def query_history(self, pattern: str, lookback_days: int, limit: int) -> list[dict[str, Any]]:
        _, rows, _ = self._execute(
            _HISTORY_SQL, {"days": int(lookback_days), "pattern": pattern, "limit": int(limit)}
        )
        return [
            history_row(
                query_id=qid, text=text, user=user, start=start, end=end, duration_ms=elapsed,
                bytes_scanned=scanned, rows_produced=produced, status=status, dialect="snowflake",
            )
            for qid, text, user, start, end, elapsed, scanned, produced, status in rows
        ]  # fmt: skip

    def _database(self) -> str:
        if self.settings.database:
            return self.settings.database
        _, rows, _ = self._execute("select current_database()")
        if not rows or not rows[0][0]:
            raise WarehouseError(
                "connection_failed", f"warehouses.{self.name}.database is not set and the session has none"
            )
        return rows[0][0]

    @staticmethod
    def _db_ref(name: str) -> str:
        """A database name as SQL: plain names unquoted (Snowflake upper-cases them), others quoted."""
        if _PLAIN.match(name):
            return name
        return '"' + name.replace('"', '""') + '"'

    def _columns(
        self, db: str, where: str, order: str, params: dict[str, Any] | None = None
    ) -> list[ColumnRow]:
        """ColumnRows from one database's INFORMATION_SCHEMA (its own schema left out), filtered and ordered."""
        sql = (
            "select c.table_catalog, c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type, "
            "c.is_nullable, c.ordinal_position, c.column_default, c.character_maximum_length, "
            "c.numeric_precision, c.numeric_scale "
            f"from {db}.information_schema.columns c left join {db}.information_schema.tables t "
            "on t.table_schema = c.table_schema and t.table_name = c.table_name "
            f"where {where}c.table_schema <> 'INFORMATION_SCHEMA' order by {order}"
        )
        _, rows, _ = self._execute(sql, params)
        return [
            ColumnRow(cat, schema, table, ttype, col, _full_type(dtype, prec, scale), nullable == "YES", pos,
                      default, cml, prec, scale)
            for cat, schema, table, ttype, col, dtype, nullable, pos, default, cml, prec, scale in rows
        ]  # fmt: skip

    def column_rows(self) -> list[ColumnRow]:
        db = self._db_ref(self._database())
        return self._columns(db, "", "c.table_schema, c.table_name, c.ordinal_position")

    def describe_table(self, parts: Sequence[str]) -> dict[str, Any]:
        *prefix, table = parts
        schema = prefix[-1] if prefix else None
        db = self._db_ref(prefix[0] if len(prefix) == 2 else self._database())
        columns = self._columns(
            db,
            "upper(c.table_name) = upper(%(t)s) and (%(s)s is null or upper(c.table_schema) = upper(%(s)s)) and ",
            "c.table_schema, c.ordinal_position",
            {"t": table, "s": schema},
        )
        return described_table(columns, parts, self.name)

    def resolve_table(self, parts: Sequence[str]) -> ResolvedTable:
        *prefix, table = parts
        schema = prefix[-1] if prefix else None
        database = prefix[0] if len(prefix) == 2 else self._database()
        db = self._db_ref(database)
        sql = (
            "select table_catalog, table_schema, table_name, column_name, data_type, is_nullable, ordinal_position "
            f"from {db}.information_schema.columns where upper(table_name) = upper(%(t)s) "
            "and (%(s)s is null or upper(table_schema) = upper(%(s)s)) and table_schema <> 'INFORMATION_SCHEMA' "
            "order by table_schema, ordinal_position"
        )
        _, rows, _ = self._execute(sql, {"t": table, "s": schema})
        return resolved_table(rows, parts, self.name)


def _full_type(data_type: str, precision: Any, scale: Any) -> str:
    """NUMBER with its precision and scale (Snowflake's INFORMATION_SCHEMA reports them separately)."""
    if data_type and data_type.upper() in ("NUMBER", "DECIMAL", "NUMERIC") and precision is not None:
        return f"{data_type.upper()}({int(precision)},{int(scale or 0)})"
    return data_type
