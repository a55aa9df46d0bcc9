"""DuckDB: the embedded default. One process may write the file at a time, so every call opens a
short-lived read-only connection (external file access off), retrying briefly while a writer holds the lock.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ade_platform.clients.warehouses.base import (
    QueryResult,
    ResolvedTable,
    WarehouseClient,
    WarehouseError,
    described_table,
    resolved_table,
    safe_message,
    to_dicts,
    unique_columns,
)
from ade_platform.lib.warehouse.schema import ColumnRow

LOCK_RETRY_SECONDS = 5.0
_COLUMNS_SQL = """
select c.table_catalog, c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type,
       c.is_nullable, c.ordinal_position, c.column_default, c.character_maximum_length,
       c.numeric_precision, c.numeric_scale
from information_schema.columns c
join information_schema.tables t
  on t.table_catalog = c.table_catalog and t.table_schema = c.table_schema and t.table_name = c.table_name
where c.table_catalog = current_database()
order by c.table_schema, c.table_name, c.ordinal_position
"""
_TABLE_COLUMNS_SQL = """
select c.table_catalog, c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type,
       c.is_nullable, c.ordinal_position, c.column_default, c.character_maximum_length,
       c.numeric_precision, c.numeric_scale
from information_schema.columns c
join information_schema.tables t
  on t.table_catalog = c.table_catalog and t.table_schema = c.table_schema and t.table_name = c.table_name
where lower(c.table_name) = lower($t)
  and ($s is null or lower(c.table_schema) = lower($s))
  and ($d is null or lower(c.table_catalog) = lower($d))
  and lower(c.table_schema) not in ('information_schema', 'pg_catalog')
order by c.table_catalog, c.table_schema, c.ordinal_position
"""


def _is_lock_conflict(exc: Exception) -> bool:
    text = str(exc).lower()
    return "lock" in text and ("conflicting" in text or "could not set lock" in text)


class DuckDBClient(WarehouseClient):
    type = "duckdb"

    def __init__(
        self,
        name: str,
        path: Path,
        schemas: Sequence[str] = (),
        timeout: float = 60,
        lock_retry: float = LOCK_RETRY_SECONDS,
    ):
        super().__init__(name, timeout)
        self.path = Path(path)
        self._schemas = tuple(schemas)
        self.lock_retry = lock_retry

    @property
    def schemas(self) -> Sequence[str]:
        return self._schemas

    @contextmanager
    def connect(self) -> Iterator[Any]:
        import duckdb

        if not self.path.exists():
            raise WarehouseError(
                "connection_failed", f"the DuckDB file of warehouse '{self.name}' does not exist yet"
            )
        deadline = time.monotonic() + self.lock_retry
        delay = 0.05
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=True, config={"enable_external_access": False})
                break
            except duckdb.Error as exc:
                if _is_lock_conflict(exc) and time.monotonic() < deadline:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                if _is_lock_conflict(exc):
                    raise WarehouseError(
                        "connection_failed",
                        f"warehouse '{self.name}' is locked by a writing process; retry when it finishes",
                    ) from None
                raise WarehouseError(
                    "connection_failed", f"cannot open warehouse '{self.name}': {safe_message(str(exc))}"
                ) from None
        try:
            yield con
        finally:
            con.close()

    def _run(
        self, con: Any, sql: str, params: Any = None, max_rows: int | None = None
    ) -> tuple[list[str], list[tuple]]:
        import duckdb

        timer = threading.Timer(self.timeout, con.interrupt)
        timer.daemon = True
        timer.start()
        try:
            cursor = con.execute(sql, params) if params is not None else con.execute(sql)
            columns = [d[0] for d in cursor.description or []]
            rows = cursor.fetchmany(max_rows) if max_rows is not None else cursor.fetchall()
            return columns, rows
        except duckdb.InterruptException:
            raise WarehouseError(
                "query_timeout", f"the query exceeded {self.timeout:g}s and was cancelled"
            ) from None
        except duckdb.CatalogException as exc:
            raise WarehouseError("query_failed", safe_message(str(exc), sql)) from None
        except duckdb.Error as exc:
            raise WarehouseError("query_failed", safe_message(str(exc), sql)) from None
        finally:
            timer.cancel()

    def query(
        self, sql: str, *, max_rows: int | None = None, params: dict[str, Any] | None = None
    ) -> QueryResult:
        with self.connect() as con:
            columns, rows = self._run(con, sql, params, max_rows)
        return QueryResult(unique_columns(columns), to_dicts(columns, rows))

    def explain(self, sql: str) -> dict[str, Any]:
        with self.connect() as con:
            _, rows = self._run(con, f"EXPLAIN {sql}")
        plan = "\n".join(str(row[-1]) for row in rows)
        return {
            "plan_text": plan,
            "estimated_bytes_scanned": None,
            "estimated_cost_credits": None,
            "notes": "DuckDB physical plan (tree text); DuckDB gives no byte estimate.",
        }

    def column_rows(self) -> list[ColumnRow]:
        with self.connect() as con:
            _, rows = self._run(con, _COLUMNS_SQL)
        return self._column_rows(rows)

    def describe_table(self, parts: Sequence[str]) -> dict[str, Any]:
        *prefix, table = parts
        params = {
            "t": table,
            "s": prefix[-1] if prefix else None,
            "d": prefix[0] if len(prefix) == 2 else None,
        }
        with self.connect() as con:
            _, rows = self._run(con, _TABLE_COLUMNS_SQL, params)
        return described_table(self._column_rows(rows), parts, self.name)

    @staticmethod
    def _column_rows(rows: Sequence[Sequence[Any]]) -> list[ColumnRow]:
        return [
            ColumnRow(
                cat, schema, table, ttype, col, dtype, nullable == "YES", pos, default, cml, prec, scale
            )
            for cat, schema, table, ttype, col, dtype, nullable, pos, default, cml, prec, scale in rows
        ]

    def resolve_table(self, parts: Sequence[str]) -> ResolvedTable:
        *prefix, table = parts
        schema = prefix[-1] if prefix else None
        database = prefix[0] if len(prefix) == 2 else None
        sql = (
            "select table_catalog, table_schema, table_name, column_name, data_type, is_nullable, ordinal_position "
            "from information_schema.columns where lower(table_name) = lower($t) "
            "and ($s is null or lower(table_schema) = lower($s)) "
            "and ($d is null or lower(table_catalog) = lower($d)) "
            "and lower(table_schema) not in ('information_schema', 'pg_catalog') "
            "order by table_catalog, table_schema, ordinal_position"
        )
        with self.connect() as con:
            _, rows = self._run(con, sql, {"t": table, "s": schema, "d": database})
        return resolved_table(rows, parts, self.name)
