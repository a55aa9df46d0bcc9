"""DuckDB: the embedded default. One process may write the file at a time, and a read-only connection blocks
that writer, so the client holds the file only while no writer needs it.

Opening a DuckDB file with `duckdb.connect` costs ~25 ms of database start-up before the catalog is even
read. Instead the client keeps a few started in-memory DuckDB instances ("hosts") and ATTACHes the file
read-only to one for a call. Attaching still reads the catalog (1-3 ms on a small one, more as it grows), so
after a call the host keeps the file attached for `hold_seconds`, and the calls of a burst skip it. The
platform's writers (Dagster runs) announce themselves on the file's write lock (`lib/warehouse/file_lock.py`):
a held host lets go within SWEEP_SECONDS, no new read starts until the write is done, and the writer waits
instead of failing. A call reuses a held attach only while the file is the one it attached (same inode, size
and mtime). Each host is locked down before it serves a query: file access only to the warehouse file and its
WAL (`allowed_paths`), external access off, configuration locked. A writer outside the platform that holds
the file makes the call wait briefly and retry; after `lock_retry` seconds it fails with a structured error.
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
# While an idle host holds the file (`hold_seconds`, DuckDBWarehouse.hold_seconds in the settings), it is
# checked this often for a writer that announced itself, which gets the file within about that long.
SWEEP_SECONDS = 0.025
_HOME = "memory"  # each host's own (empty) in-memory catalog, current while no file is attached
_RESERVED = frozenset({"memory", "system", "temp", "main"})
# The columns of a ColumnRow, with their table's type; each query below adds its filter and order.
_SELECT_COLUMNS = """
select c.table_catalog, c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type,
       c.is_nullable, c.ordinal_position, c.column_default, c.character_maximum_length,
       c.numeric_precision, c.numeric_scale
from information_schema.columns c
join information_schema.tables t
  on t.table_catalog = c.table_catalog and t.table_schema = c.table_schema and t.table_name = c.table_name
"""
_COLUMNS_SQL = (
    _SELECT_COLUMNS
    + """where c.table_catalog = current_database()
order by c.table_schema, c.table_name, c.ordinal_position
"""
)
_TABLE_COLUMNS_SQL = (
    _SELECT_COLUMNS
    + """where lower(c.table_name) = lower($t)
  and ($s is null or lower(c.table_schema) = lower($s))
  and (($d is null and c.table_catalog = current_database()) or lower(c.table_catalog) = lower($d))
  and lower(c.table_schema) not in ('information_schema', 'pg_catalog')
order by c.table_catalog, c.table_schema, c.ordinal_position
"""
)


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


class _Host:
    """A started, locked-down in-memory DuckDB instance, and its lease on the file while it has it attached."""

    def __init__(self, con: Any, lease: file_lock.ReadLease, alias: str) -> None:
        self.con = con
        self.lease = lease
        self.alias = alias
        self.attached: tuple[int, int, int, int] | None = None  # the file's identity when attached
        self.idle_since = 0.0

    def detach(self) -> bool:
        """Let go of the file; False when the instance cannot (it is then only fit to be closed)."""
        if self.attached is None:
            return True
        self.attached = None
        try:
            self.con.execute(f"USE {_HOME}")
            self.con.execute(f"DETACH {self.alias}")
            return True
        except Exception:
            return False
        finally:
            self.lease.release()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()  # closing the instance releases the file, attached or not
        self.attached = None
        self.lease.close()


def _identity(path: Path) -> tuple[int, int, int, int]:
    """What tells a file replaced or rewritten behind a held attach (a new inode, size or mtime)."""
    st = os.stat(path)
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _close_hosts(hosts: list[_Host]) -> None:
    while hosts:
        hosts.pop().close()


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


class DuckDBClient(WarehouseClient):
    type = "duckdb"

    def __init__(
        self,
        name: str,
        path: Path,
        schemas: Sequence[str] = (),
        timeout: float = 60,
        lock_retry: float = LOCK_RETRY_SECONDS,
        hold_seconds: float = 0.0,
    ):
        super().__init__(name, timeout)
        self.path = Path(path)
        self._schemas = tuple(schemas)
        self.lock_retry = lock_retry
        self.hold_seconds = hold_seconds
        # The catalog takes the file's stem, as `duckdb.connect(path)` names it, so queries read the same.
        self._alias = _quote(
            self.path.stem if self.path.stem.lower() not in _RESERVED else f"{self.path.stem}_db"
        )
        self._idle: list[_Host] = []
        self._hosts_lock = threading.Lock()
        self._sweep_armed = False
        self._closed = False
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
        host = self._acquire_host()
        try:
            self._ensure_attached(host)
        except file_lock.LockTimeout:
            self._release_host(host, healthy=False)
            raise WarehouseError("connection_failed", self._locked_detail()) from None
        except BaseException:
            self._release_host(host, healthy=False)
            raise
        healthy = False
        try:
            yield host.con
            healthy = True
        finally:
            self._release_host(host, healthy=healthy)

    def _locked_detail(self) -> str:
        return f"warehouse '{self.name}' is locked by a writing process; retry when it finishes"

    def close(self) -> None:
        with self._hosts_lock:
            self._closed = True
            _close_hosts(self._idle)

    def _acquire_host(self) -> _Host:
        with self._hosts_lock:
            if self._idle:
                return self._idle.pop()
        import duckdb

        con = duckdb.connect(":memory:")
        try:
            # Set once, before anything the agent wrote can run, then frozen: the host may open the
            # warehouse file (and its WAL, replayed on attach) and nothing else.
            # DuckDB checks the path it opens after resolving symlinks: allow the file as configured and as
            # resolved (a deployment may point the configured path at a shared volume).
            paths = {str(self.path), os.path.realpath(self.path)}
            con.execute("SET allowed_paths = $paths", {"paths": sorted(paths | {f"{p}.wal" for p in paths})})
            con.execute("SET enable_external_access = false")
            con.execute("SET lock_configuration = true")
        except BaseException:
            con.close()
            raise
        return _Host(con, file_lock.ReadLease(self.path), self._alias)

    def _ensure_attached(self, host: _Host) -> None:
        """Attach the file unless the host still has this very file attached and no writer wants it."""
        if host.attached is not None:
            if host.attached == self._identity() and not host.lease.writer_waiting():
                return
            host.detach()
        host.lease.acquire(self.lock_retry)
        try:
            identity = self._identity()
            self._attach(host.con)
        except BaseException:
            host.lease.release()
            raise
        host.attached = identity

    def _identity(self) -> tuple[int, int, int, int]:
        try:
            return _identity(self.path)
        except OSError:  # moved or deleted since the call began
            raise WarehouseError(
                "connection_failed", f"the DuckDB file of warehouse '{self.name}' is not there"
            ) from None

    def _release_host(self, host: _Host, *, healthy: bool) -> None:
        hold = healthy and self.hold_seconds > 0 and host.lease.cooperative
        if not hold or host.lease.writer_waiting():
            healthy = host.detach() and healthy
        with self._hosts_lock:
            if healthy and not self._closed and len(self._idle) < MAX_IDLE_HOSTS:
                host.idle_since = time.monotonic()
                self._idle.append(host)
                if host.attached is not None and not self._sweep_armed:
                    self._sweep_armed = True
                    _WATCHDOG.arm(SWEEP_SECONDS, self._sweep)
                return
        host.close()

    def _sweep(self) -> None:
        """Detach the idle hosts held past `hold_seconds`, or at once when a writer announces itself.

        Runs on the watchdog thread every SWEEP_SECONDS while any idle host holds the file, so a waiting
        writer gets the file within about that long."""
        now = time.monotonic()
        with self._hosts_lock:
            due = [
                h for h in self._idle
                if h.attached is not None
                and (now - h.idle_since >= self.hold_seconds or h.lease.writer_waiting())
            ]  # fmt: skip
            for host in due:
                self._idle.remove(host)
        for host in due:
            healthy = host.detach()
            with self._hosts_lock:
                if healthy and not self._closed:
                    self._idle.append(host)
                    continue
            host.close()
        with self._hosts_lock:
            if any(h.attached is not None for h in self._idle):
                _WATCHDOG.arm(SWEEP_SECONDS, self._sweep)
            else:
                self._sweep_armed = False

    def _attach(self, con: Any) -> None:
        import duckdb

        def attach() -> None:
            con.execute(f"ATTACH $path AS {self._alias} (READ_ONLY)", {"path": str(self.path)})
            con.execute(f"USE {self._alias}")

        try:
            file_lock.retry_on_lock_conflict(attach, self.lock_retry)
        except file_lock.LockTimeout:
            raise WarehouseError("connection_failed", self._locked_detail()) from None
        except duckdb.Error as exc:
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
