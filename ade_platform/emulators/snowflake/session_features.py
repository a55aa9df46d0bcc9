"""fakesnow's server, taught the Snowflake features that let one statement reach another's result.

fakesnow (DuckDB underneath) keeps every result by query id, as Snowflake does, but has no LAST_QUERY_ID,
no DESCRIBE RESULT and no dynamic PIVOT. The attacks on a session-reusing transport need all three, so the
tests (`python -m tests.fakes.fakesnow_server`) and the demo's Snowflake stand-in (`emulators/snowflake`) serve
fakesnow with these installed (`install()`); they behave as Snowflake documents them:

- ``LAST_QUERY_ID()`` / ``LAST_QUERY_ID(n)``: the id of the session's latest (n < 0: n-th latest; n > 0: n-th)
  statement that ran; NULL when there is none.
- ``DESCRIBE RESULT '<id>'`` / ``DESCRIBE RESULT LAST_QUERY_ID(...)``: the column names and types of that
  result (the results of every session of the server are kept, like a Snowflake user's for 24 hours).
- ``PIVOT (... FOR col IN (ANY [ORDER BY ...]))`` and ``IN (SELECT ...)``: the pivot values are read first,
  so the result's columns are named after them (`'value'`), as Snowflake names them.

Statements the wrapper runs for itself (pivot values) are not part of any session's history.

And a statement fakesnow cannot run is answered at once with a compilation error, as Snowflake would answer
it: fakesnow lets the exception escape as HTTP 500, which the connector retries for its whole network timeout
while the session stays busy, so concurrent callers of the session time out behind it.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Callable
from typing import Any

import fakesnow.cursor
import snowflake.connector.errors
import sqlglot
from sqlglot import exp

# `fakesnow.server` is also a function of the package: import the module by name.
_SERVER_MODULE = importlib.import_module("fakesnow.server")
_ORIGINAL_EXECUTE = fakesnow.cursor.FakeSnowflakeCursor.execute
_ORIGINAL_DESCRIBE_LAST = fakesnow.cursor.FakeSnowflakeCursor._describe_last_sql
_ORIGINAL_PARSE = _SERVER_MODULE.parse_one
_LAST_QUERY_ID = re.compile(r"\bLAST_QUERY_ID\s*\(\s*(-?\d+)?\s*\)", re.I)
_DESCRIBE_RESULT = re.compile(r"^\s*DESC(?:RIBE)?\s+RESULT\s+'([^']*)'\s*;?\s*$", re.I)


def _history(cursor: Any) -> list[str]:
    conn = cursor._conn
    if not hasattr(conn, "_ade_query_ids"):
        conn._ade_query_ids = []
    return conn._ade_query_ids


def _query_id(history: list[str], n: int) -> str | None:
    try:
        return history[n - 1] if n > 0 else history[n]
    except IndexError:
        return None


def _with_query_ids(sql: str, history: list[str]) -> str:
    def literal(match: re.Match[str]) -> str:
        found = _query_id(history, int(match.group(1) or -1))
        return "NULL" if found is None else f"'{found}'"

    return _LAST_QUERY_ID.sub(literal, sql)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _describe_result(cursor: Any, query_id: str) -> str:
    """DESCRIBE RESULT as a query over constants: one row per column of the kept result."""
    cached = cursor._conn.results_cache.get(query_id)
    if cached is None:
        raise snowflake.connector.errors.ProgrammingError(
            msg=f"Statement {query_id} not found", errno=709, sqlstate="02000"
        )
    table = cached[0]
    rows = [
        f'SELECT {_quote(field.name)} AS "name", {_quote(str(field.type).upper())} AS "type", '
        "'COLUMN' AS \"kind\", 'Y' AS \"null?\""
        for field in table.schema
    ]
    return " UNION ALL ".join(rows)


def _pivot_values(cursor: Any, pivot: exp.Pivot, field: exp.In) -> list[Any] | None:
    """The values of a dynamic pivot's IN list, read with a statement outside the session's history."""
    values = field.expressions
    if len(values) != 1:
        return None
    value = values[0]
    if isinstance(value, exp.PivotAny):
        source = pivot.parent.copy()
        source.set("pivots", None)
        order = value.this.sql(dialect="snowflake") if value.this else ""
        query = (
            f"SELECT DISTINCT {field.this.sql(dialect='snowflake')} FROM {source.sql(dialect='snowflake')}"
        )
        query = f"SELECT * FROM ({query}) {order}"
    elif isinstance(value, (exp.Select, exp.Subquery)):
        query = value.sql(dialect="snowflake")
    else:
        return None
    helper = cursor._conn.cursor()
    _ORIGINAL_EXECUTE(helper, query)
    return [row[0] for row in helper.fetchall() if row[0] is not None]


def _static_pivots(cursor: Any, sql: str) -> str:
    if "PIVOT" not in sql.upper():
        return sql
    try:
        tree = sqlglot.parse_one(sql, read="snowflake")
    except sqlglot.errors.ParseError:
        return sql
    changed = False
    for pivot in list(tree.find_all(exp.Pivot)):
        for field in pivot.args.get("fields") or []:
            found = _pivot_values(cursor, pivot, field) if isinstance(field, exp.In) else None
            if found is not None:
                literals = [exp.convert(v if isinstance(v, (int, float)) else str(v)) for v in found]
                field.set("expressions", literals)
                pivot.set("columns", None)
                changed = True
    return tree.sql(dialect="snowflake") if changed else sql


def _answered_at_once(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except snowflake.connector.errors.Error:
            raise
        except Exception as exc:  # a feature fakesnow lacks: Snowflake would compile it or refuse it at once
            raise snowflake.connector.errors.ProgrammingError(
                msg=f"SQL compilation error: not supported by the fake server ({type(exc).__name__})",
                errno=2,
                sqlstate="0A000",
            ) from None

    return call


@_answered_at_once
def execute(self: Any, command: str, params: Any = None, *args: Any, **kwargs: Any) -> Any:
    history = _history(self)
    command = _with_query_ids(command, history)
    describe = _DESCRIBE_RESULT.match(command)
    if describe:
        command = _describe_result(self, describe.group(1))
    command = _static_pivots(self, command)
    result = _ORIGINAL_EXECUTE(self, command, params, *args, **kwargs)
    if self._sfqid:
        history.append(self._sfqid)
    return result


def parse_one(sql: str, *args: Any, **kwargs: Any) -> Any:
    """The server parses a statement once for its type before running it: DESCRIBE RESULT is a query."""
    if re.match(r"^\s*DESC(?:RIBE)?\s+RESULT\b", sql, re.I):
        return _ORIGINAL_PARSE("SELECT 1")
    return _ORIGINAL_PARSE(sql, *args, **kwargs)


def install() -> None:
    fakesnow.cursor.FakeSnowflakeCursor.execute = execute  # type: ignore[method-assign]
    describe_last = _answered_at_once(_ORIGINAL_DESCRIBE_LAST)
    fakesnow.cursor.FakeSnowflakeCursor._describe_last_sql = describe_last  # type: ignore[method-assign]
    _SERVER_MODULE.parse_one = parse_one


def fakesnow_app() -> Any:
    """fakesnow's ASGI app (its databases shared in memory by every session of the process)."""
    return _SERVER_MODULE.app


def shared_connection(database: str | None = None, schema: str | None = None) -> Any:
    """A connection to the databases the server's sessions share (to load data before it serves)."""
    return _SERVER_MODULE.shared_fs.connect(database, schema)
