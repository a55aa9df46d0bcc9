"""DuckDB: the embedded default. One process may write the file at a time, and a read-only connection blocks
that writer, so the client never holds the file between calls.

Opening a DuckDB file with `duckdb.connect` costs ~25 ms of database start-up before the catalog is even
read. Instead the client keeps a few started in-memory DuckDB instances ("hosts") and, per call, ATTACHes
the file read-only, runs the query and DETACHes it: the lock on the file lasts as long as the call, the
start-up is paid once. Each host is locked down before it serves a query: file access only to the warehouse
file and its WAL (`allowed_paths`), external access off, configuration locked. A writer that holds the file
makes the call wait briefly and retry; after `lock_retry` seconds it fails with a structured error. The
platform's own writers (Dagster runs) take the file's write lock (`lib/warehouse/file_lock.py`), which waits
for the read in flight instead of failing on it.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
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
from ade_platform.lib.warehouse import file_lock
from ade_platform.lib.warehouse.schema import ColumnRow

LOCK_RETRY_SECONDS = 5.0
MAX_IDLE_HOSTS = 4  # started instances kept between calls (one per concurrent call, up to this many)
_HOME = "memory"  # each host's own (empty) in-memory catalog, current while no file is attached
_RESERVED = frozenset({"memory", "system", "temp", "main"})
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
  and (($d is null and c.table_catalog = current_database()) or lower(c.table_catalog) = lower($d))
  and lower(c.table_schema) not in ('information_schema', 'pg_catalog')
order by c.table_catalog, c.table_schema, c.ordinal_position
"""


class _Watchdog:
    """Interrupts queries that outlive their deadline: one thread for every query of the process, because
    starting a timer thread per query costs more than a small query (the caller waits for it to start)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadlines: dict[int, tuple[float, Callable[[], None]]] = {}
        self._tokens = itertools.count()
        self._next_wake = math.inf
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, on_expiry: Callable[[], None]) -> int:
        token = next(self._tokens)
        deadline = time.monotonic() + seconds
        with self._cond:
            self._deadlines[token] = (deadline, on_expiry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="ade-duckdb-watchdog", daemon=True)
                self._thread.start()
            elif deadline < self._next_wake:
                self._cond.notify()
        return token

    def disarm(self, token: int) -> None:
        with self._cond:
            self._deadlines.pop(token, None)

    def _loop(self) -> None:
        while True:
            with self._cond:
                now = time.monotonic()
                expired = [t for t, (deadline, _) in self._deadlines.items() if deadline <= now]
                callbacks = [self._deadlines.pop(t)[1] for t in expired]
                self._next_wake = min((d for d, _ in self._deadlines.values()), default=math.inf)
                if not callbacks:
                    wait = None if self._next_wake == math.inf else self._next_wake - now
                    self._cond.wait(wait)
                    continue
            for callback in callbacks:
                with contextlib.suppress(Exception):  # the connection may be closed by now
                    callback()


_WATCHDOG = _Watchdog()


def _close_hosts(hosts: list[Any]) -> None:
    while hosts:
        with contextlib.suppress(Exception):
            hosts.pop().close()


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


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
        # The catalog takes the file's stem, as `duckdb.connect(path)` names it, so queries read the same.
        self._alias = _quote(
            self.path.stem if self.path.stem.lower() not in _RESERVED else f"{self.path.stem}_db"
        )
        self._idle: list[Any] = []
        self._hosts_lock = threading.Lock()
        # Idle hosts are closed with the client, or at interpreter exit at the latest.
        self._finalizer = weakref.finalize(self, _close_hosts, self._idle)

    @property
    def schemas(self) -> Sequence[str]:
        return self._schemas

    @contextmanager
    def connect(self) -> Iterator[Any]:
        """A connection on which the file is attached read-only and current, for the length of the block."""
        if not self.path.exists():
            raise WarehouseError(
                "connection_failed", f"the DuckDB file of warehouse '{self.name}' does not exist yet"
            )
        try:
            with file_lock.reading(self.path, self.lock_retry):
                host = self._acquire_host()
                try:
                    self._attach(host)
                except BaseException:
                    self._release_host(host, healthy=False)
                    raise
                healthy = False
                try:
                    yield host
                    healthy = True
                finally:
                    try:
                        host.execute(f"USE {_HOME}")
                        host.execute(f"DETACH {self._alias}")
                    except Exception:  # a host that cannot let go of the file is closed, which releases it
                        healthy = False
                    self._release_host(host, healthy=healthy)
        except file_lock.LockTimeout:
            raise WarehouseError("connection_failed", self._locked_detail()) from None

    def _locked_detail(self) -> str:
        return f"warehouse '{self.name}' is locked by a writing process; retry when it finishes"

    def close(self) -> None:
        with self._hosts_lock:
            _close_hosts(self._idle)

    def _acquire_host(self) -> Any:
        with self._hosts_lock:
            if self._idle:
                return self._idle.pop()
        import duckdb

        host = duckdb.connect(":memory:")
        try:
            # Set once, before anything the agent wrote can run, then frozen: the host may open the
            # warehouse file (and its WAL, replayed on attach) and nothing else.
            # DuckDB checks the path it opens after resolving symlinks: allow the file as configured and as
            # resolved (a deployment may point the configured path at a shared volume).
            paths = {str(self.path), os.path.realpath(self.path)}
            host.execute("SET allowed_paths = $paths", {"paths": sorted(paths | {f"{p}.wal" for p in paths})})
            host.execute("SET enable_external_access = false")
            host.execute("SET lock_configuration = true")
        except BaseException:
            host.close()
            raise
        return host

    def _release_host(self, host: Any, *, healthy: bool) -> None:
        with self._hosts_lock:
            if healthy and len(self._idle) < MAX_IDLE_HOSTS:
                self._idle.append(host)
                return
        host.close()

    def _attach(self, host: Any) -> None:
        import duckdb

        deadline = time.monotonic() + self.lock_retry
        delay = 0.05
        while True:
            try:
                host.execute(f"ATTACH $path AS {self._alias} (READ_ONLY)", {"path": str(self.path)})
                host.execute(f"USE {self._alias}")
                return
            except duckdb.Error as exc:
                if _is_lock_conflict(exc) and time.monotonic() < deadline:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                if _is_lock_conflict(exc):
                    raise WarehouseError("connection_failed", self._locked_detail()) from None
                raise WarehouseError(
                    "connection_failed", f"cannot open warehouse '{self.name}': {safe_message(str(exc))}"
                ) from None

    def _run(
        self, con: Any, sql: str, params: Any = None, max_rows: int | None = None
    ) -> tuple[list[str], list[tuple]]:
        import duckdb

        token = _WATCHDOG.arm(self.timeout, con.interrupt)
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
            _WATCHDOG.disarm(token)

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
