"""Redaction of tool arguments before they become audit records (Dagster run tags).

Every value is walked, at any depth (dicts, lists): a key that names a secret has its value replaced; a SQL
argument keeps its statement and loses its literals, tokenized in the warehouse's own dialect (BigQuery's
"..." strings, backslash escapes, Snowflake's $$...$$); every other string (a dbt `steps_override`, a DAG's
`conf` values, free text) is scrubbed of secrets by the one scrubber (`ade_platform.lib.secrets`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import re2

from ade_platform.lib.secrets import REDACTED, scrubber_for

Scrub = Callable[[str], str]
_SECRET_KEY = re.compile(
    r"(pass(word)?|passwd|pwd|secret|token|api[_-]?key|credential|private[_-]?key)", re.IGNORECASE
)
_SQL_KEY = re.compile(r"^(sql|query|statement|ddl)$", re.IGNORECASE)
MAX_DEPTH = 32  # deeper than this, a value is replaced whole
MAX_SQL_CHARS = 20_000  # a tag keeps 2,000 characters; a longer statement is cut before it is tokenized
DIALECTS = ("duckdb", "snowflake", "bigquery", "postgres")


def _re2(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    return re2.compile(pattern, options)


# The fallback for statements the tokenizer refuses: every quoted string goes, whatever escapes it uses (a
# backslash escapes the next character, '' is a quote), and an unterminated one runs to the end. RE2: linear.
_SINGLE_QUOTED = _re2(r"'(?:[^'\\]|''|\\(?s:.))*(?:'|\z)")
_DOUBLE_QUOTED = _re2(r'"(?:[^"\\]|""|\\(?s:.))*(?:"|\z)')
_DOLLAR_QUOTED = _re2(r"\$\$(?s:.*?)(?:\$\$|\z)")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")  # no nested quantifier: linear on `re` too


def strip_sql_literals(sql: str, dialect: str | None = None) -> str:
    """Replace every string and number literal with '?' and drop comments: the statement as written stays,
    its values go. `dialect` is the warehouse's type (duckdb, snowflake, bigquery): its quoting rules decide
    what a string is ("..." is a string in BigQuery, an identifier elsewhere).

    Works on sqlglot's tokens, not its parse tree: a token knows where it sits in the text, so the statement
    keeps the agent's own spelling, and tokenizing costs a tenth of parsing and regenerating (this runs on
    every live call that takes SQL)."""
    sql = sql[:MAX_SQL_CHARS]
    try:
        from sqlglot.dialects.dialect import Dialect
        from sqlglot.tokens import TokenType

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
        tokens = Dialect.get_or_raise(dialect if dialect in DIALECTS else None).tokenize(sql)
        parts: list[str] = []
        end = -1
        for token in tokens:
            if token.start <= end:
                continue  # inside a $$...$$ string the tokenizer did not know
            gap = sql[end + 1 : token.start]
            if parts:  # between two tokens: whitespace as written; a comment becomes one space
                parts.append(gap if gap.isspace() or not gap else " ")
            literal = token.token_type in literal_types
            end = token.end
            if token.token_type == TokenType.VAR and token.text.startswith("$$") and dialect != "bigquery":
                # a dialect without dollar quoting reads $$a b$$ as words: the string runs to the next $$
                closing = sql.find("$$", token.start + 2)
                end = len(sql) - 1 if closing < 0 else closing + 1
                literal = True
            parts.append("?" if literal else sql[token.start : token.end + 1])
        return "".join(parts)
    except Exception:
        # Untokenizable SQL still must not leak its literals: fall back to lexical scrubbing.
        return _lexical(sql, dialect)


def _lexical(sql: str, dialect: str | None) -> str:
    text = _DOLLAR_QUOTED.sub("?", sql)
    if dialect not in ("duckdb", "snowflake", "postgres"):  # BigQuery (or unknown): "..." may be a string
        text = _DOUBLE_QUOTED.sub("?", text)
    text = _SINGLE_QUOTED.sub("?", text)
    return _NUMBER.sub("?", text)


def redact_arguments(
    arguments: dict[str, Any], *, scrub: Scrub | None = None, dialect: str | None = None
) -> dict[str, Any]:
    """The arguments as an audit record may show them. `scrub` is the configured secrets' scrubber
    (default: the credential shapes only); `dialect` the warehouse type a SQL argument is written for."""
    scrub = scrub or scrubber_for(())
    return _redact_mapping(arguments, scrub, dialect, 0)


def redact_text(text: str, scrub: Scrub | None = None) -> str:
    """Free text (a call's cause) scrubbed of secrets."""
    return (scrub or scrubber_for(()))(text)


def _redact_mapping(mapping: dict[str, Any], scrub: Scrub, dialect: str | None, depth: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in mapping.items():
        name = str(key)
        shown = scrub(name)
        if _SECRET_KEY.search(name):
            result[shown] = REDACTED
        elif _SQL_KEY.match(name) and isinstance(value, str):
            result[shown] = scrub(strip_sql_literals(value, dialect))
        else:
            result[shown] = _redact_value(value, scrub, dialect, depth + 1)
    return result


def _redact_value(value: Any, scrub: Scrub, dialect: str | None, depth: int) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    if depth > MAX_DEPTH:
        return REDACTED
    if isinstance(value, dict):
        return _redact_mapping(value, scrub, dialect, depth)
    if isinstance(value, list | tuple | set | frozenset):
        return [_redact_value(item, scrub, dialect, depth + 1) for item in value]
    return scrub(str(value))
