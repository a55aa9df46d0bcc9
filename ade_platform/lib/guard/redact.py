"""Turn a DATA result into schema + counts, and strip values out of error messages.

``redact_result`` never copies a cell: the only things derived from rows are the row count and, per
column, the share of NULLs - and both are withheld (None) when the classifier says the query shape could
make them answer a predicate (``Classification.stats_safe``). Column names are replaced by positions when
they may have been named after values (``Classification.names_safe``, e.g. PIVOT ... IN (ANY)).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from ade_platform.lib.guard._tokens import identifier_texts, literal_texts, tokenize
from ade_platform.lib.guard.policy import GuardPolicy

# Snowflake type strings: NUMBER(38,0), VARCHAR(16777216), TIMESTAMP_NTZ(9), ARRAY, VARIANT...
_TYPE_RE = re.compile(r"[A-Za-z][A-Za-z0-9_ ]{0,40}(\(\s*\d{1,9}\s*(,\s*\d{1,9}\s*)?\))?")
_NUMBER_RE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


def _columns(columns: Sequence[Mapping[str, Any]], rows: Sequence[Any]) -> list[tuple[str, str]]:
    if columns:
        out = []
        for i, col in enumerate(columns):
            name = str(col.get("name") or f"column_{i + 1}")[:255]
            type_ = str(col.get("type") or "UNKNOWN")
            # A type string is metadata; anything that does not look like one is not trusted to be.
            out.append((name, type_ if _TYPE_RE.fullmatch(type_) else "UNKNOWN"))
        return out
    names: dict[str, None] = {}
    width = 0
    for row in rows:
        if isinstance(row, Mapping):
            names.update(dict.fromkeys(str(k)[:255] for k in row))
        elif isinstance(row, (list, tuple)):
            width = max(width, len(row))
    if names:
        return [(n, "UNKNOWN") for n in names]
    return [(f"column_{i + 1}", "UNKNOWN") for i in range(width)]


def _cell(row: Any, index: int, name: str) -> Any:
    if isinstance(row, Mapping):
        return row.get(name)  # a missing key counts as NULL
    if isinstance(row, (list, tuple)):
        return row[index] if index < len(row) else None
    return row if index == 0 else None


def redact_result(
    columns: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any] | Sequence[Any]],
    *,
    include_stats: bool = True,
    include_names: bool = True,
) -> dict[str, Any]:
    """``{"columns": [{"name", "type", "null_percentage"}], "row_count": N, "redacted": True}``.

    ``columns`` are ``{"name", "type"}`` dicts (as the snow CLI describes a result); ``rows`` dicts or
    sequences. Withheld statistics are None; withheld names become ``column_<n>``.
    """
    cols = _columns(columns, rows)
    count = len(rows)
    out_cols = []
    for i, (name, type_) in enumerate(cols):
        pct: float | None = None
        if include_stats and count:
            nulls = sum(1 for row in rows if _cell(row, i, name) is None)
            pct = round(100.0 * nulls / count, 2)
        out_cols.append(
            {"name": name if include_names else f"column_{i + 1}", "type": type_, "null_percentage": pct}
        )
    return {"columns": out_cols, "row_count": count if include_stats else None, "redacted": True}


def _numeric(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, Decimal)):
        return True
    return isinstance(value, str) and bool(_NUMBER_RE.fullmatch(value.strip()))


def scalar_result(
    columns: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any] | Sequence[Any]],
    policy: GuardPolicy,
) -> dict[str, Any]:
    """Values of a SCALAR query, checked again after execution: at most ``max_scalar_rows`` rows of numbers.

    Anything else means the classifier was wrong about the statement, so the result is redacted instead.
    """
    cols = _columns(columns, rows)
    cells = [_cell(row, i, name) for row in rows for i, (name, _) in enumerate(cols)]
    if len(rows) <= policy.max_scalar_rows and all(_numeric(c) for c in cells):
        return {"columns": [{"name": n, "type": t} for n, t in cols], "rows": list(rows), "redacted": False}
    return redact_result(columns, rows, include_stats=False)


# '...' with '' or \' escapes, "..." with "" escapes, $$...$$.
_QUOTED_RE = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"]|\"\")*\"|\$\$.*?\$\$", re.S)
# A quoted name right after one of these words is an object or column name, not a value.
_NAME_CONTEXT_RE = re.compile(
    r"(identifier|object|table|view|schema|database|column|function|procedure|stage|warehouse|role|sequence|"
    r"task|stream|format|integration|tag|policy)\s*$",
    re.I,
)
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(\.[\w-]+)+")
_NUMBER_IN_TEXT_RE = re.compile(r"(?<![A-Za-z0-9_.])-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![A-Za-z0-9_])")
_KEEP_NUMBER_BEFORE_RE = re.compile(r"(line|position|pos|col:?|column)\s*$", re.I)
_MASK = "***"


def _is_sql_name(text: str, identifiers: set[str]) -> bool:
    parts = [p.strip().strip('"').upper() for p in text.split(".")]
    return bool(parts) and all(p and p in identifiers for p in parts)


def scrub_error(message: str, sql: str) -> str:
    """Remove values from a database error message (``Numeric value 'abc-123' is not recognized``).

    Quoted spans are masked unless they are a name the statement itself wrote, in a name context
    (``invalid identifier 'SSN'``); every string literal of the statement and long numeric literal is
    masked wherever it appears; numbers are masked except line/position and the leading error code.
    """
    text = str(message)[:4000]
    tokens = tokenize(sql)
    identifiers = identifier_texts(tokens) if tokens else set()
    literals = (
        literal_texts(tokens) if tokens else [m.group(0).strip("'\"$") for m in _QUOTED_RE.finditer(sql)]
    )
    literal_set = {lit.upper() for lit in literals}

    def quoted(m: re.Match[str]) -> str:
        span = m.group(0)
        inner = span[2:-2] if span.startswith("$$") else span[1:-1]
        in_name_context = bool(_NAME_CONTEXT_RE.search(text[: m.start()]))
        if in_name_context and inner.upper() not in literal_set and _is_sql_name(inner, identifiers):
            return span
        return f"'{_MASK}'"

    text = _QUOTED_RE.sub(quoted, text)
    for lit in sorted(set(literals), key=len, reverse=True):
        if not lit.strip() or (_NUMBER_RE.fullmatch(lit) and len(lit) < 3):
            continue
        pattern = re.escape(lit) if len(lit) >= 3 else rf"(?<![A-Za-z0-9_]){re.escape(lit)}(?![A-Za-z0-9_])"
        text = re.sub(pattern, _MASK, text, flags=re.I)
    text = _EMAIL_RE.sub(_MASK, text)

    def number(m: re.Match[str]) -> str:
        before = text[: m.start()]
        if _KEEP_NUMBER_BEFORE_RE.search(before):
            return m.group(0)
        # Snowflake errors start with a six-digit code and a five-character SQLSTATE: `002003 (42S02):`.
        if m.start() == 0 and re.match(r"\d{6} \(", text):
            return m.group(0)
        if before.endswith("(") and text[m.end() : m.end() + 1] == ")" and len(m.group(0)) == 5:
            return m.group(0)
        return "#"

    text = _NUMBER_IN_TEXT_RE.sub(number, text)
    return text[:1000]
