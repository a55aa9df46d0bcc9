"""The demo warehouse as the BI emulators read it: real SQL on the DuckDB file the dbt_demo project builds.

Dagster (dbt, the loaders) writes that file, and DuckDB lets one process write it at a time: every query opens
a read-only connection and closes it at once, retries briefly while a writer holds the lock, and is interrupted
past its timeout. Failures come back as the database's message, the way a BI tool shows a broken tile.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from ade_platform.lib.warehouse.file_lock import LockTimeout, retry_on_lock_conflict

LOCK_RETRY_SECONDS = 10.0


class QueryFailed(Exception):
    """The warehouse rejected or could not run a query; the message is what the BI tool would show."""


def warehouse_path(explicit: str | None = None) -> Path:
    if explicit:
        return Path(explicit)
    home = Path(os.environ.get("ADE_HOME") or Path.cwd() / ".ade")
    return home / "warehouse" / "demo.duckdb"


def run_sql(
    path: Path, sql: str, params: list[Any] | None = None, *, limit: int | None = None, timeout: float = 60
) -> tuple[list[str], list[tuple]]:
    """Column names and rows (at most `limit`) of one query, on a fresh read-only connection."""
    import duckdb

    if not path.exists():
        raise QueryFailed("the warehouse has not been built yet (no demo.duckdb): run `ade materialize`")
    try:
        con = retry_on_lock_conflict(
            lambda: duckdb.connect(str(path), read_only=True, config={"enable_external_access": False}),
            LOCK_RETRY_SECONDS,
        )
    except LockTimeout:
        raise QueryFailed("the warehouse is locked by a writing process; try again shortly") from None
    except duckdb.Error as exc:
        raise QueryFailed(f"cannot open the warehouse: {type(exc).__name__}") from None
    timer = threading.Timer(timeout, con.interrupt)
    timer.daemon = True
    timer.start()
    try:
        cursor = con.execute(sql, params or [])
        columns = [d[0] for d in cursor.description or []]
        rows = cursor.fetchmany(limit) if limit is not None else cursor.fetchall()
        return columns, rows
    except duckdb.InterruptException:
        raise QueryFailed(f"the query was cancelled after {timeout:g} s") from None
    except duckdb.Error as exc:
        # DuckDB's first line names the problem ("Binder Error: Referenced column ... not found").
        raise QueryFailed(str(exc).splitlines()[0]) from None
    finally:
        timer.cancel()
        con.close()


def jsonable(value: Any) -> Any:
    """A DuckDB value as the BI tools' JSON carries it."""
    import datetime
    import decimal

    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (datetime.date, datetime.datetime, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return value
