"""Redaction of tool arguments before they become audit records (Dagster run tags)."""

from __future__ import annotations

import re
from typing import Any

_SECRET_KEY = re.compile(r"(pass(word)?|secret|token|api[_-]?key|credential|private[_-]?key)", re.IGNORECASE)
_SQL_KEY = re.compile(r"^(sql|query|statement|ddl)$", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*'")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def strip_sql_literals(sql: str) -> str:
    """Replace every string and number literal with '?': the statement's shape stays, its values go."""
    try:
        import sqlglot
        from sqlglot import exp

        def scrub(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Literal):
                return exp.Placeholder()
            return node

        statements = sqlglot.parse(sql)
        return "; ".join(s.transform(scrub).sql() for s in statements if s is not None)
    except Exception:
        # Unparseable SQL still must not leak its literals: fall back to lexical scrubbing.
        return _NUMBER.sub("?", _QUOTED.sub("?", sql))


def redact_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in arguments.items():
        if _SECRET_KEY.search(key):
            result[key] = "***"
        elif _SQL_KEY.match(key) and isinstance(value, str):
            result[key] = strip_sql_literals(value)
        elif isinstance(value, dict):
            result[key] = redact_arguments(value)
        else:
            result[key] = value
    return result
