"""DDL text: normalization and hashing, and reconstruction from INFORMATION_SCHEMA where GET_DDL is missing.

Reconstructed DDL is a faithful CREATE for tables (columns, types, nullability, defaults, comments), views
(their stored definition), schemas, databases and SQL functions/procedures; it is not byte-identical to
GET_DDL's output, so a repository synced one way is compared the same way (the index records the source).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from ade_platform.lib.snowflake.objects import quote_ident, sql_literal

Row = Mapping[str, Any]


def normalize_ddl(text: str) -> str:
    lines = [line.rstrip() for line in str(text).replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    body = "\n".join(lines)
    if body and not body.endswith(";"):
        body += ";"
    return body + "\n"


def ddl_hash(text: str) -> str:
    return hashlib.sha256(normalize_ddl(text).encode()).hexdigest()


def _get(row: Row, key: str) -> Any:
    if key in row:
        return row[key]
    return row.get(key.lower())


def fqn(*parts: str | None) -> str:
    return ".".join(quote_ident(p) for p in parts if p)


def column_type(row: Row) -> str:
    base = str(_get(row, "DATA_TYPE") or "VARIANT").upper()
    length = _get(row, "CHARACTER_MAXIMUM_LENGTH")
    precision, scale = _get(row, "NUMERIC_PRECISION"), _get(row, "NUMERIC_SCALE")
    dt_precision = _get(row, "DATETIME_PRECISION")
    if base in ("TEXT", "VARCHAR", "STRING", "CHAR", "CHARACTER"):
        return f"VARCHAR({length})" if length else "VARCHAR"
    if base in ("NUMBER", "DECIMAL", "NUMERIC") and precision is not None:
        return f"NUMBER({precision},{scale or 0})"
    if base.startswith(("TIMESTAMP", "TIME")) and dt_precision is not None:
        return f"{base}({dt_precision})"
    if base in ("BINARY", "VARBINARY") and length:
        return f"BINARY({length})"
    return base


def table_ddl(database: str, schema: str, name: str, columns: Iterable[Row], table: Row | None = None) -> str:
    cols = sorted(columns, key=lambda r: int(_get(r, "ORDINAL_POSITION") or 0))
    lines = []
    for col in cols:
        line = f"\t{quote_ident(str(_get(col, 'COLUMN_NAME')))} {column_type(col)}"
        if str(_get(col, "IS_NULLABLE") or "YES").upper() == "NO":
            line += " NOT NULL"
        default = _get(col, "COLUMN_DEFAULT")
        if default not in (None, ""):
            line += f" DEFAULT {default}"
        comment = _get(col, "COMMENT")
        if comment:
            line += f" COMMENT {sql_literal(str(comment))}"
        lines.append(line)
    kind = "TABLE"
    if table is not None and str(_get(table, "IS_TRANSIENT") or "NO").upper() == "YES":
        kind = "TRANSIENT TABLE"
    text = f"create or replace {kind} {fqn(database, schema, name)} (\n" + ",\n".join(lines) + "\n)"
    comment = _get(table, "COMMENT") if table is not None else None
    if comment:
        text += f" COMMENT={sql_literal(str(comment))}"
    return normalize_ddl(text)


def view_ddl(database: str, schema: str, name: str, definition: str, *, materialized: bool = False) -> str:
    body = str(definition or "").strip()
    if body.lower().startswith("create"):
        return normalize_ddl(body)
    kind = "MATERIALIZED VIEW" if materialized else "VIEW"
    return normalize_ddl(f"create or replace {kind} {fqn(database, schema, name)} as\n{body}")


def schema_ddl(database: str, schema: str, row: Row | None = None) -> str:
    text = f"create or replace schema {fqn(database, schema)}"
    comment = _get(row, "COMMENT") if row is not None else None
    if comment:
        text += f" COMMENT={sql_literal(str(comment))}"
    return normalize_ddl(text)


def database_ddl(database: str, row: Row | None = None) -> str:
    text = f"create or replace database {quote_ident(database)}"
    comment = _get(row, "COMMENT") if row is not None else None
    if comment:
        text += f" COMMENT={sql_literal(str(comment))}"
    return normalize_ddl(text)


def routine_ddl(kind: str, database: str, schema: str, row: Row) -> str:
    """FUNCTION/PROCEDURE from INFORMATION_SCHEMA.FUNCTIONS/PROCEDURES (SQL and other languages)."""
    name = str(_get(row, f"{kind}_NAME") or _get(row, "NAME"))
    signature = str(_get(row, "ARGUMENT_SIGNATURE") or "()")
    returns = str(_get(row, "DATA_TYPE") or "VARIANT")
    language = str(_get(row, f"{kind}_LANGUAGE") or "SQL")
    body = str(_get(row, f"{kind}_DEFINITION") or "")
    text = (
        f"create or replace {kind.lower()} {fqn(database, schema, name)}{signature}\n"
        f"returns {returns}\nlanguage {language}\nas $$\n{body}\n$$"
    )
    return normalize_ddl(text)


def routine_signature(row: Row, kind: str) -> str:
    """F(NUMBER, VARCHAR) from ARGUMENT_SIGNATURE '(X NUMBER, Y VARCHAR)'."""
    name = str(_get(row, f"{kind}_NAME") or _get(row, "NAME"))
    raw = str(_get(row, "ARGUMENT_SIGNATURE") or "()").strip().strip("()")
    types = [a.strip().split()[-1] for a in raw.split(",") if a.strip()]
    return f"{name}({', '.join(types)})"
