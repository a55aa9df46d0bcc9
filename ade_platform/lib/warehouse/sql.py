"""Read-only SQL on the AST: one statement, a query, nothing that writes; LIMIT applied by rewriting.

Deny by default: a statement sqlglot cannot parse into a query is refused, as is any batch of more than
one statement, any write or DDL node anywhere in the tree (a DELETE inside a CTE, SELECT ... INTO,
SELECT ... FOR UPDATE) and functions with side effects (sequences, Snowflake SYSTEM$ calls). What runs
is the SQL generated from the checked AST, never the original text, so what was checked is what runs.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from ade_platform.lib.errors import CodedError

DIALECTS = {"duckdb": "duckdb", "snowflake": "snowflake", "bigquery": "bigquery"}
_WRITE_NODES: tuple[type[exp.Expression], ...] = tuple(
    getattr(exp, name)
    for name in (
        "DML", "DDL", "Alter", "TruncateTable", "Command", "Copy", "Attach", "Detach", "Set", "Use",
        "Grant", "Revoke", "Pragma", "Install", "LoadData", "Transaction", "Commit", "Rollback", "Into",
        "Lock", "Analyze", "Refresh", "Cache", "Uncache", "Kill", "Execute", "Export", "Declare", "Put",
        "Get", "Merge",
    )
    if hasattr(exp, name)
)  # fmt: skip
_SIDE_EFFECT_FUNCTIONS = frozenset({"nextval", "setval", "currval", "lastval"})
_SIDE_EFFECT_PREFIXES = ("system$",)
WRAP_ALIAS = "ade_q"


class SqlRefused(CodedError):
    """The statement is not a single read-only query (dml_not_permitted)."""

    def __init__(self, detail: str):
        super().__init__("dml_not_permitted", detail)


class SqlInvalid(CodedError):
    """The statement cannot be parsed in the warehouse's dialect (invalid_argument)."""

    def __init__(self, detail: str):
        super().__init__("invalid_argument", detail)


@dataclass(frozen=True)
class PreparedQuery:
    sql: str  # the statement to run (generated from the checked AST)
    limit_applied: bool  # the server added or lowered the LIMIT
    fetch: int  # rows to fetch: the agent's limit + 1 when we applied it (one extra tells truncation)
    limit: int


@functools.cache
def _dialect(warehouse_type: str) -> Dialect:
    """The sqlglot dialect, resolved once: sqlglot resolves a dialect's name again on every call it gets."""
    try:
        return Dialect.get_or_raise(DIALECTS[warehouse_type])
    except KeyError:
        raise ValueError(f"unknown warehouse type {warehouse_type!r}") from None


def parse_read_only(sql: str, warehouse_type: str) -> exp.Expression:
    """The single read-only query in `sql`, or SqlRefused / SqlInvalid saying why not."""
    dialect = _dialect(warehouse_type)
    if not sql or not sql.strip():
        raise SqlInvalid("sql is empty")
    _quiet_sqlglot()
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (ParseError, TokenError) as exc:
        raise SqlInvalid(
            f"the SQL is not valid {DIALECTS[warehouse_type]} ({_parse_error_position(exc)})"
        ) from None
    if not statements:
        raise SqlInvalid("sql contains no statement")
    if len(statements) > 1:
        raise SqlRefused(f"multi-statement batches are not allowed ({len(statements)} statements)")
    statement = statements[0]
    kind = type(statement).__name__.upper()
    if isinstance(statement, _WRITE_NODES) or not isinstance(statement, (exp.Query, exp.Values)):
        raise SqlRefused(f"only read-only queries (SELECT, WITH, UNION, VALUES) are allowed, got {kind}")
    for node in statement.walk():
        if isinstance(node, _WRITE_NODES):
            raise SqlRefused(
                f"the query contains a {type(node).__name__.upper()} clause, which writes or locks"
            )
        if isinstance(node, exp.Func):
            name = (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()
            if name in _SIDE_EFFECT_FUNCTIONS or name.startswith(_SIDE_EFFECT_PREFIXES):
                raise SqlRefused(f"function {name.upper()} has side effects and is not allowed")
    return statement


def _errors_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR


def _quiet_sqlglot() -> None:
    """sqlglot warns when it falls back to an opaque Command; the check refuses those anyway. A filter on its
    logger, added once: toggling the logger's level around each parse raced between threads and cleared
    every logger's cache twice per query."""
    logger = logging.getLogger("sqlglot")
    if _errors_only not in logger.filters:
        logger.addFilter(_errors_only)


def _parse_error_position(exc: Exception) -> str:
    errors = getattr(exc, "errors", None) or []
    if errors:
        first = errors[0]
        desc = str(first.get("description") or "syntax error").split("\n")[0][:120]
        return f"{desc} at line {first.get('line')}, column {first.get('col')}"
    return "syntax error"


def _literal_limit(node: exp.Expression | None) -> int | None:
    """The row count of a LIMIT / FETCH node when it is a plain integer literal, else None."""
    if node is None:
        return None
    options = node.args.get("limit_options")
    if options is not None and (options.args.get("percent") or options.args.get("with_ties")):
        return None
    value = node.args.get("count") if isinstance(node, exp.Fetch) else node.expression
    if isinstance(value, exp.Literal) and not value.is_string:
        try:
            return int(str(value.this))
        except ValueError:
            return None
    return None


def prepare_select(sql: str, warehouse_type: str, limit: int) -> PreparedQuery:
    """Check `sql` is read-only and bound its rows by `limit` on the AST."""
    if limit < 1:
        raise SqlInvalid("limit must be at least 1")
    statement = parse_read_only(sql, warehouse_type)
    dialect = _dialect(warehouse_type)
    existing = statement.args.get("limit") if isinstance(statement, (exp.Select, exp.SetOperation)) else None
    current = _literal_limit(existing)
    if current is not None and current <= limit:
        return PreparedQuery(statement.sql(dialect=dialect, copy=False), False, current, limit)
    if isinstance(statement, (exp.Select, exp.SetOperation)) and (existing is None or current is not None):
        # Set in place (the tree was parsed for this call alone); `Query.limit` would parse the number.
        statement.set("limit", exp.Limit(expression=exp.Literal.number(limit + 1)))
        bounded = statement
    else:
        # A LIMIT we cannot read (a parameter, PERCENT, WITH TIES) or a bare VALUES: bound it from outside.
        wrapped = exp.Subquery(
            this=statement.copy(), alias=exp.TableAlias(this=exp.to_identifier(WRAP_ALIAS))
        )
        bounded = exp.select("*").from_(wrapped).limit(limit + 1)
    return PreparedQuery(bounded.sql(dialect=dialect, copy=False), True, limit + 1, limit)


def prepare_explain(sql: str, warehouse_type: str) -> str:
    """The checked, regenerated statement to explain (EXPLAIN of a write is refused like the write)."""
    return parse_read_only(sql, warehouse_type).sql(dialect=_dialect(warehouse_type))


# ---------------------------------------------------------------------------------------------------
# Statements the tools build themselves, with identifiers quoted for the warehouse.


def relation_tables(tree: exp.Expression) -> Iterator[exp.Table]:
    """The table references of a parsed statement that name a relation it reads: CTE names and table
    functions (read_csv, FLATTEN, ...) left out. The one reading of "which tables does this SQL read" that the
    BI tile tables and the lineage join share."""
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        if not table.name or isinstance(table.this, exp.Func):
            continue
        if not table.db and not table.catalog and table.name.lower() in ctes:
            continue
        yield table


def quote_ident(name: str, warehouse_type: str) -> str:
    if warehouse_type == "bigquery":
        return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"
    return '"' + name.replace('"', '""') + '"'


def quote_table(parts: Sequence[str], warehouse_type: str) -> str:
    return ".".join(quote_ident(p, warehouse_type) for p in parts)


def max_timestamp_sql(table: Sequence[str], column: str, warehouse_type: str) -> str:
    col = quote_ident(column, warehouse_type)
    return f"SELECT MAX({col}) AS max_value, COUNT(*) AS row_count FROM {quote_table(table, warehouse_type)}"


def duplicate_summary_sql(table: Sequence[str], keys: Sequence[str], warehouse_type: str) -> str:
    """total_rows, distinct_key_count, duplicate_key_count, duplicate_row_count (NULL keys excluded)."""
    tbl = quote_table(table, warehouse_type)
    cols = ", ".join(quote_ident(k, warehouse_type) for k in keys)
    not_null = " AND ".join(f"{quote_ident(k, warehouse_type)} IS NOT NULL" for k in keys)
    return (
        f"WITH ade_keys AS (SELECT {cols}, COUNT(*) AS ade_n FROM {tbl} WHERE {not_null} GROUP BY {cols}) "
        f"SELECT (SELECT COUNT(*) FROM {tbl}) AS total_rows, COUNT(*) AS distinct_key_count, "
        "SUM(CASE WHEN ade_n > 1 THEN 1 ELSE 0 END) AS duplicate_key_count, "
        "SUM(CASE WHEN ade_n > 1 THEN ade_n ELSE 0 END) AS duplicate_row_count FROM ade_keys"
    )


def duplicate_sample_sql(table: Sequence[str], keys: Sequence[str], warehouse_type: str, samples: int) -> str:
    """One row per duplicated key (the most repeated first), with its occurrence count."""
    q = quote_ident
    tbl = quote_table(table, warehouse_type)
    cols = ", ".join(q(k, warehouse_type) for k in keys)
    not_null = " AND ".join(f"{q(k, warehouse_type)} IS NOT NULL" for k in keys)
    join = " AND ".join(f"ade_t.{q(k, warehouse_type)} = ade_d.{q(k, warehouse_type)}" for k in keys)
    partition = ", ".join(f"ade_t.{q(k, warehouse_type)}" for k in keys)
    return (
        f"WITH ade_d AS (SELECT {cols}, COUNT(*) AS ade_occurrences FROM {tbl} WHERE {not_null} "
        f"GROUP BY {cols} HAVING COUNT(*) > 1 ORDER BY ade_occurrences DESC LIMIT {int(samples)}) "
        "SELECT * FROM (SELECT ade_t.*, ade_d.ade_occurrences AS ade_occurrences, "
        f"ROW_NUMBER() OVER (PARTITION BY {partition} ORDER BY {partition}) AS ade_rn "
        f"FROM {tbl} AS ade_t JOIN ade_d ON {join}) AS ade_s WHERE ade_rn = 1 "
        "ORDER BY ade_occurrences DESC"
    )
