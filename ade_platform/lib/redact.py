"""Redaction of tool arguments before they become audit records (Dagster run tags)."""

from __future__ import annotations

import re
from typing import Any

_SECRET_KEY = re.compile(r"(pass(word)?|secret|token|api[_-]?key|credential|private[_-]?key)", re.IGNORECASE)
_SQL_KEY = re.compile(r"^(sql|query|statement|ddl)$", re.IGNORECASE)
_QUOTED = re.compile(r"'(?:[^']|'')*(?:'|$)")  # an unterminated string runs to the end
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")


def strip_sql_literals(sql: str) -> str:
    """Replace every string and number literal with '?' and drop comments: the statement as written stays,
    its values go.

    Works on sqlglot's tokens, not its parse tree: a token knows where it sits in the text, so the statement
    keeps the agent's own spelling, and tokenizing costs a tenth of parsing and regenerating (this runs on
    every live call that takes SQL)."""
    try:
        from sqlglot.tokens import Tokenizer, TokenType

        literal_types = {
            TokenType.STRING,
            TokenType.NUMBER,
            TokenType.BIT_STRING,
            TokenType.HEX_STRING,
            TokenType.BYTE_STRING,
            TokenType.NATIONAL_STRING,
            TokenType.RAW_STRING,
            TokenType.HEREDOC_STRING,
            TokenType.UNICODE_STRING,
        }
        parts: list[str] = []
        end = -1
        for token in Tokenizer().tokenize(sql):
            gap = sql[end + 1 : token.start]
            if parts:  # between two tokens: whitespace as written; a comment becomes one space
                parts.append(gap if gap.isspace() or not gap else " ")
            dollar_quoted = token.token_type == TokenType.VAR and token.text.startswith("$$")
            literal = token.token_type in literal_types or dollar_quoted
            parts.append("?" if literal else sql[token.start : token.end + 1])
            end = token.end
        return "".join(parts)
    except Exception:
        # Untokenizable SQL still must not leak its literals: fall back to lexical scrubbing.
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
