"""The SQL that profiles one relation: one aggregate query (a single scan), then at most one small grouped query
for the value mixes of the columns that turned out to have few distinct values.

Names come from a warehouse's catalog and are treated as hostile: every identifier is quoted by its dialect's
rules (DuckDB and Snowflake double a `"`), and a name BigQuery could not hold (a backtick, a backslash, a control
character: its quoted identifiers take escapes we refuse to rely on) is refused, as is a NUL anywhere. Protected
columns are never selected as values: only `COUNT(col)` and `APPROX_COUNT_DISTINCT(col)` (and the duplicate count
of a declared key) name them, and they are left out of the mix query. Every aggregate is read by position (`outputs`), so no alias has to survive a dialect's case
folding.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from ade_platform.lib.dbt import pii
from ade_platform.lib.guard.policy import matches_exclusion
from ade_platform.lib.sql_protect import ProtectRules

DIALECTS = ("duckdb", "snowflake", "bigquery")
MAX_COLUMNS = (
    300  # columns profiled per relation: four aggregates each keeps one query within every dialect's bound
)
_BIGQUERY_REFUSED = re.compile(r"[`\\\x00-\x1f\x7f]")

_TEXT = {"duckdb": "VARCHAR", "snowflake": "VARCHAR", "bigquery": "STRING"}
_DOUBLE = {"duckdb": "DOUBLE", "snowflake": "DOUBLE", "bigquery": "FLOAT64"}

_INTEGER = re.compile(
    r"^(?:U?(?:TINY|SMALL|BIG|HUGE)?INT(?:EGER|\d+)?|INT64|BYTEINT|LONG|SHORT|SIGNED|(?:NUMBER|DECIMAL|NUMERIC)"
    r"\s*\(\s*\d+\s*,\s*0\s*\))$"
)
_NUMERIC = re.compile(
    r"^(?:NUMBER|DECIMAL|NUMERIC|DEC|BIGNUMERIC|BIGDECIMAL|FLOAT\d*|FLOAT64|DOUBLE(?: PRECISION)?|REAL)\b"
)
_TEMPORAL = re.compile(r"^(?:DATE|DATETIME|TIME|TIMESTAMP)")
_TEXTUAL = re.compile(r"^(?:N?VARCHAR2?|TEXT|STRING|N?CHAR(?:ACTER)?|BPCHAR|CHARACTER VARYING|UUID|ENUM)")
_BOOLEAN = re.compile(r"^(?:BOOL(?:EAN)?|LOGICAL)$")
_OPAQUE = re.compile(r"^(?:BINARY|VARBINARY|BLOB|BYTEA|BYTES)")


class UnsafeName(ValueError):
    """A relation or column name this dialect's quoting cannot carry safely."""


def type_class(raw: str) -> str:
    """integer | numeric | temporal | text | boolean | opaque (counts, no bounds) | nested (nulls only)."""
    text = " ".join((raw or "").upper().split())
    if not text or "[" in text or re.match(r"^(?:STRUCT|ARRAY|MAP|LIST|UNION|JSON|VARIANT|OBJECT|GEO)", text):
        return "nested"
    if _INTEGER.match(text):
        return "integer"
    if _NUMERIC.match(text):
        return "numeric"
    if _TEMPORAL.match(text):
        return "temporal"
    if _BOOLEAN.match(text):
        return "boolean"
    if _TEXTUAL.match(text):
        return "text"
    if _OPAQUE.match(text):
        return "opaque"
    return "nested"  # a type we do not know is not compared or counted distinct: a query that always runs


def quote(dialect: str, name: str) -> str:
    if dialect not in DIALECTS:
        raise ValueError(f"no profile SQL for dialect {dialect!r}")
    if not name or "\x00" in name:
        raise UnsafeName("an identifier is empty or holds a NUL")
    if dialect == "bigquery":
        if _BIGQUERY_REFUSED.search(name):
            raise UnsafeName("a BigQuery identifier holds a backtick, a backslash or a control character")
        return f"`{name}`"
    return '"' + name.replace('"', '""') + '"'


def relation_parts(relation: str | Sequence[str]) -> tuple[str, ...]:
    """A relation as its name's parts, exactly as the warehouse spells them; a string is split on dots (pass a
    tuple when a part holds a dot)."""
    parts = tuple(relation.split(".")) if isinstance(relation, str) else tuple(relation)
    if not parts or len(parts) > 3:
        raise UnsafeName("a relation is one to three name parts")
    return parts


def relation_name(relation: str | Sequence[str]) -> str:
    """`db.schema.name`, lower case: how profiles are keyed."""
    return ".".join(relation_parts(relation)).lower()


@dataclass(frozen=True)
class ProfileQueries:
    """The aggregate query, how to read its one row, and the columns a mix query may name."""

    dialect: str
    table: str  # the quoted relation
    aggregate: str
    outputs: tuple[tuple[str | None, str], ...]  # per result position: (column or None, metric)
    columns: tuple[tuple[str, str], ...]  # the profiled (name, type), in order
    protected: frozenset[str]
    mixable: tuple[str, ...]  # unprotected text, boolean and integer columns
    unique_keys: tuple[tuple[str, ...], ...]  # the declared keys whose columns all exist
    skipped_columns: int
    mix_bound: int

    def mix(self, columns: Iterable[str]) -> str | None:
        """One grouped query (one scan, GROUPING SETS) for the value mixes of `columns`: a row per (column, value)
        with GROUPING() flags telling which column it counts. None when no column asks for one."""
        wanted = [c for c in self.mixable if c in set(columns)]
        if not wanted:
            return None
        text = _TEXT[self.dialect]
        flags = [f"GROUPING({quote(self.dialect, c)})" for c in wanted]
        values = [f"CAST({quote(self.dialect, c)} AS {text})" for c in wanted]
        sets = ", ".join(f"({quote(self.dialect, c)})" for c in wanted)
        select = ", ".join([*flags, *values, "COUNT(*)"])
        return f"SELECT {select} FROM {self.table} GROUP BY GROUPING SETS ({sets})"


def _key_expression(dialect: str, key: Sequence[str]) -> str:
    """Rows beyond the first per key value. One column: dbt's `unique` (nulls are not values). Several: dbt_utils'
    `unique_combination_of_columns` (a group by every column, nulls included)."""
    quoted = [quote(dialect, c) for c in key]
    if len(quoted) == 1:
        return f"COUNT({quoted[0]}) - COUNT(DISTINCT {quoted[0]})"
    joined = ", ".join(quoted)
    if dialect == "duckdb":
        distinct = f"COUNT(DISTINCT ({joined}))"  # a row value: NULL fields are compared, not dropped
    elif dialect == "snowflake":
        distinct = f"COUNT(DISTINCT HASH({joined}))"  # HASH takes NULLs; 64 bits: collisions are negligible
    else:
        distinct = f"COUNT(DISTINCT TO_JSON_STRING(STRUCT({joined})))"
    return f"COUNT(*) - {distinct}"


def key_name(key: Sequence[str]) -> str:
    return ",".join(key)


def profile_queries(
    dialect: str,
    relation: str | Sequence[str],
    columns: Sequence[tuple[str, str]],
    *,
    unique_keys: Iterable[str | Sequence[str]] = (),
    protected: Collection[str] = (),
    mix_bound: int = 20,
) -> ProfileQueries:
    """The aggregate query over `relation` (parts as the warehouse spells them) and its `columns` ((name, type)
    from the catalog). `unique_keys`: "col", "a,b" or a sequence of columns; a key naming a column the relation
    lacks is dropped. `protected`: column names (any case) whose values are never selected."""
    if dialect not in DIALECTS:
        raise ValueError(f"no profile SQL for dialect {dialect!r}")
    table = ".".join(quote(dialect, part) for part in relation_parts(relation))
    guarded = {p.lower() for p in protected}
    kept = list(columns)[:MAX_COLUMNS]
    exprs = ["COUNT(*)"]
    outputs: list[tuple[str | None, str]] = [(None, "rows")]
    mixable = []
    double = _DOUBLE[dialect]
    for name, raw_type in kept:
        q = quote(dialect, name)
        kind = type_class(raw_type)
        exprs.append(f"COUNT({q})")
        outputs.append((name, "non_null"))
        if kind != "nested":
            # Approximate (HyperLogLog in all three): an exact distinct per column is most of a profile's cost;
            # the mix query counts the low-cardinality columns exactly.
            exprs.append(f"APPROX_COUNT_DISTINCT({q})")
            outputs.append((name, "distinct"))
        if name.lower() in guarded:
            continue
        if kind in ("integer", "numeric", "temporal"):
            exprs += [f"MIN({q})", f"MAX({q})"]
            outputs += [(name, "min"), (name, "max")]
        if kind in ("integer", "numeric"):
            exprs.append(f"SUM(CAST({q} AS {double}))")  # a float sum never overflows an integer type
            outputs.append((name, "sum"))
        if kind in ("integer", "text", "boolean"):
            mixable.append(name)
    by_lower = {name.lower(): name for name, _ in kept}
    keys: list[tuple[str, ...]] = []
    for key in unique_keys:
        parts = [p.strip() for p in (key.split(",") if isinstance(key, str) else key)]
        resolved = tuple(by_lower.get(p.lower(), "") for p in parts)
        if resolved and all(resolved) and resolved not in keys:
            keys.append(resolved)
            exprs.append(_key_expression(dialect, resolved))
            outputs.append((None, f"dup:{key_name(resolved)}"))
    return ProfileQueries(
        dialect=dialect,
        table=table,
        aggregate=f"SELECT {', '.join(exprs)} FROM {table}",
        outputs=tuple(outputs),
        columns=tuple(kept),
        protected=frozenset(name for name, _ in kept if name.lower() in guarded),
        mixable=tuple(mixable),
        unique_keys=tuple(keys),
        skipped_columns=max(0, len(columns) - len(kept)),
        mix_bound=mix_bound,
    )


def protected_columns(
    relation: str | Sequence[str], columns: Iterable[str], rules: ProtectRules
) -> frozenset[str]:
    """The columns whose values a profile must not hold: every column of a relation the exclusions name, else
    those whose names look like personal data (the PII patterns) or that dbt tags `pii` (the column, or its
    whole relation)."""
    parts = relation_parts(relation)
    names = list(columns)
    dotted = ".".join('"' + p.replace('"', '""') + '"' for p in parts)
    if matches_exclusion(dotted, rules.exclusions) is not None:
        return frozenset(names)
    short = parts[-1].lower()
    if (short, "*") in rules.tagged:
        return frozenset(names)
    return frozenset(
        n for n in names if (short, n.lower()) in rules.tagged or pii.match(n.strip(), rules.pii_patterns)
    )
