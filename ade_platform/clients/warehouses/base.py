"""The warehouse client contract shared by DuckDB, Snowflake and BigQuery, and its structured errors."""

from __future__ import annotations

import base64
import re
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from ade_platform.lib.errors import CodedError
from ade_platform.lib.redact import strip_sql_literals
from ade_platform.lib.warehouse.schema import ColumnRow, build_snapshot, only_table, schema_dot_name

HISTORY_TEXT_CHARS = 500
_QUOTED = re.compile(r"'([^']*)'")
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?/(?:[\w.\-]+/)+[\w.\-]*")


class WarehouseError(CodedError):
    """An expected warehouse failure; `code` is one of the toolset's error codes, `detail` is agent-safe."""


@dataclass
class QueryResult:
    columns: list[str]
    rows: list[dict[str, Any]]
    bytes_processed: int | None = None
    query_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ResolvedTable:
    """A table found live in the warehouse, with its exact spelling and columns."""

    parts: tuple[str, ...]  # what to quote in SQL: (database, schema, table) or (project, dataset, table)
    columns: list[dict[str, Any]]  # {"name", "type", "nullable", "position"}

    @property
    def display(self) -> str:
        return ".".join(self.parts)


def resolved_table(rows: Sequence[Sequence[Any]], parts: Sequence[str], warehouse: str) -> ResolvedTable:
    """Exactly one table from INFORMATION_SCHEMA.COLUMNS rows (catalog, schema, table, column, type,
    is_nullable, position); none is table_not_found, several an ambiguity the caller must qualify."""
    found: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for cat, schema, table, column, dtype, nullable, position in rows:
        found.setdefault((cat, schema, table), []).append(
            {"name": column, "type": dtype, "nullable": nullable in ("YES", True), "position": position}
        )
    key, columns = only_table(
        sorted(found.items()),
        ".".join(parts),
        f"in warehouse '{warehouse}'",
        lambda item: ".".join(item[0][1:]),
        WarehouseError,
    )
    return ResolvedTable(parts=key, columns=columns)


def described_table(rows: Sequence[ColumnRow], parts: Sequence[str], warehouse: str) -> dict[str, Any]:
    """Exactly one snapshot-shaped table from the column rows of a single-table catalog query."""
    tables = build_snapshot(warehouse, "", rows)["tables"]
    return only_table(tables, ".".join(parts), f"in warehouse '{warehouse}'", schema_dot_name, WarehouseError)


def jsonable(value: Any) -> Any:
    """A value as JSON can carry it: decimals as numbers, times as ISO text, bytes as base64."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Decimal):
        if value.is_nan() or value.is_infinite():
            return str(value)
        return int(value) if value == value.to_integral_value() and abs(value) < 2**53 else float(value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    return str(value)


def unique_columns(columns: Sequence[str]) -> list[str]:
    """Column names made unique (`a`, `a_2`, ...) so every value of a row survives as a dict."""
    seen: dict[str, int] = {}
    result = []
    for name in columns:
        count = seen.get(name, 0) + 1
        seen[name] = count
        result.append(name if count == 1 else f"{name}_{count}")
    return result


def to_dicts(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    names = unique_columns(columns)
    return [dict(zip(names, map(jsonable, row), strict=False)) for row in rows]


def safe_message(message: str, sql: str | None = None) -> str:
    """A warehouse error message fit for an agent: first line, no paths, no data values.

    Quoted text is kept only when it also appears in the caller's own SQL outside string literals
    (an identifier the agent wrote); anything else in quotes may be a value from the table and goes.
    """
    first = (message or "").strip().splitlines()[0] if message and message.strip() else "error"
    known = {t.lower() for t in _TOKEN.findall(strip_sql_literals(sql))} if sql else set()

    def keep(match: re.Match[str]) -> str:
        text = match.group(1)
        parts = [p for p in re.split(r"[.\s]+", text.lower()) if p]
        return match.group(0) if parts and all(p in known for p in parts) else "'?'"

    return _PATH.sub("<path>", _QUOTED.sub(keep, first))[:400]


class WarehouseClient(ABC):
    """One configured warehouse. Methods open short-lived connections and raise WarehouseError."""

    type: str = ""

    def __init__(self, name: str, timeout: float):
        self.name = name
        self.timeout = float(timeout)

    # -- queries -----------------------------------------------------------------------------------
    @abstractmethod
    def query(
        self, sql: str, *, max_rows: int | None = None, params: dict[str, Any] | None = None
    ) -> QueryResult:
        """Run one statement (already checked by the caller) and fetch up to max_rows rows."""

    @abstractmethod
    def explain(self, sql: str) -> dict[str, Any]:
        """plan_text, estimated_bytes_scanned, notes: the plan of a checked statement, not run."""

    def query_history(self, pattern: str, lookback_days: int, limit: int) -> list[dict[str, Any]]:
        raise WarehouseError(
            "not_implemented",
            f"warehouse '{self.name}' ({self.type}) keeps no queryable query history",
        )

    # -- metadata ----------------------------------------------------------------------------------
    @abstractmethod
    def column_rows(self) -> list[ColumnRow]:
        """INFORMATION_SCHEMA.COLUMNS (+ TABLES) of the configured databases/schemas."""

    @property
    def schemas(self) -> Sequence[str]:
        return ()

    def snapshot(self) -> dict[str, Any]:
        return build_snapshot(self.name, self.type, self.column_rows(), self.schemas)

    def fingerprint(self) -> str:
        """Cheap identity of the current schema (a sensor compares it with the stored snapshot's)."""
        return self.snapshot()["fingerprint"]

    @abstractmethod
    def resolve_table(self, parts: Sequence[str]) -> ResolvedTable:
        """The table that 1-3 name parts designate, live; WarehouseError table_not_found otherwise."""

    def describe_table(self, parts: Sequence[str]) -> dict[str, Any]:
        """One table, live, in the shape of a schema snapshot's table (one catalog query): what the
        single-table schema and drift tools observe. Backends that can read the full column metadata
        (defaults, lengths, precision) in that one query override this."""
        resolved = self.resolve_table(parts)
        *prefix, schema, name = resolved.parts
        return {
            "database": prefix[0] if prefix else None,
            "schema": schema,
            "name": name,
            "table_type": None,
            "columns": [
                {
                    "name": c["name"],
                    "type": c["type"],
                    "nullable": bool(c["nullable"]),
                    "position": int(c["position"]),
                    "default": None,
                    "char_max_length": None,
                    "numeric_precision": None,
                    "numeric_scale": None,
                }
                for c in sorted(resolved.columns, key=lambda c: c["position"])
            ],
        }

    def close(self) -> None:
        """Release pooled resources (clients open connections per call; most have nothing to do)."""
        return None


class ServiceWarehouseClient(WarehouseClient):
    """A warehouse reached as a service (Snowflake, BigQuery): its ade.yaml section, and one driver handle (a
    connection, an API client) opened on first use, shared under a lock, and closed by close()."""

    def __init__(self, name: str, settings: Any, timeout: float):
        super().__init__(name, timeout)
        self.settings = settings
        self._handle: Any = None
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                try:
                    self._handle.close()
                finally:
                    self._handle = None


def history_row(
    *,
    query_id: Any,
    text: str | None,
    user: Any,
    start: Any,
    end: Any,
    duration_ms: Any,
    bytes_scanned: Any,
    rows_produced: Any,
    status: Any,
    dialect: str | None = None,
) -> dict[str, Any]:
    """One entry of warehouse_get_query_history, literals stripped from the text (values stay private) by the
    quoting rules of the warehouse's dialect."""
    redacted = strip_sql_literals(text, dialect) if text else ""
    return {
        "query_id": str(query_id) if query_id is not None else None,
        "query_text_truncated": redacted[:HISTORY_TEXT_CHARS],
        "user_name": user,
        "start_time": jsonable(start),
        "end_time": jsonable(end),
        "duration_ms": int(duration_ms) if duration_ms is not None else None,
        "bytes_scanned": int(bytes_scanned) if bytes_scanned is not None else None,
        "rows_produced": int(rows_produced) if rows_produced is not None else None,
        "execution_status": status,
    }
