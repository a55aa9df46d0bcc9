"""What a Look's rows may show an agent (issue 23 §6): masked columns, a row cap, or only the result's shape.

`bi_run_look` returns rows (the spec asks for them), which makes it a way to read any table a Look reads. So:
- every column of a Look over a table the Snowflake exclusions name (`snowflake.exclusions`, the guard's own
  matcher) is masked, and so is every column whose name, or a warehouse column or field its LookML SQL reads,
  looks like personal data (the platform's PII patterns plus the `pii` settings) or is tagged `pii` in the
  stored dbt manifest;
- a key the Look's query does not declare (a table calculation, anything unexpected) is masked: it cannot be
  checked; a pivoted value (keyed by the pivot dimension's values) is masked when the pivot field is;
- at most `bi.max_rows` rows come back, `truncated` says when there were more;
- with `bi.run_look: shape`, no value at all: columns, types, row count and null percentages, as the Snowflake
  proxy answers a DATA statement.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from typing_extensions import TypedDict

from ade_platform.lib.dbt import pii
from ade_platform.lib.guard.policy import GuardPolicy, matches_exclusion
from ade_platform.lib.shapes import OpenShape

MASK = "<masked>"
RunLookMode = Literal["rows", "shape"]
# Warehouse columns (`${TABLE}.email`) and other fields (`${email}`, `${customers.email}`) a LookML SQL reads.
TABLE_COLUMN = re.compile(r"\$\{TABLE\}\.\"?([A-Za-z_][A-Za-z0-9_$]*)")
_FIELD_REF = re.compile(r"\$\{(?!TABLE\})([A-Za-z_][A-Za-z0-9_.]*)\}")


class LookField(TypedDict):
    name: str  # view.field, as the result's keys name it
    type: str | None  # LookML type (string, number, date, count, sum, ...)
    sql: str | None  # LookML SQL of the field, where the explore gives it
    relation: str | None  # the warehouse table it reads; None when unknown (a joined view, a derived table)


class MaskedColumn(OpenShape):
    column: str
    # pii:<pattern> | pii_tag:<table>.<column> | excluded_table:<relation> | unverified_table | undeclared_field
    # | pivot_on_masked_field | unparsed_sql
    reason: str


class ColumnShape(OpenShape):
    name: str
    type: str
    null_percentage: float | None  # None for a masked column: nothing is derived from its values


@dataclass(frozen=True)
class LookRules:
    """What makes a column protected: the exclusion policy (globs and regexes, placed in the BI warehouse's
    default database and schema), the PII name patterns and the columns dbt tags as personal data; the dialect
    the BI tool's SQL is written in."""

    exclusions: GuardPolicy
    pii_patterns: tuple[pii.PiiPattern, ...] = pii.BUILTIN_PATTERNS
    dialect: str | None = None
    default_schema: str | None = None
    # (table, column) pairs dbt tags as personal data, lower-case; (table, "*") for a tagged relation
    tagged: frozenset[tuple[str, str]] = frozenset()


def read_names(field: LookField) -> list[str]:
    """The field's own name and every warehouse column or field its SQL reads (short names)."""
    names = [field["name"].rsplit(".", 1)[-1]]
    sql = field.get("sql") or ""
    names += TABLE_COLUMN.findall(sql)
    names += [ref.rsplit(".", 1)[-1] for ref in _FIELD_REF.findall(sql)]
    return list(dict.fromkeys(names))


def protected_columns(
    fields: Sequence[LookField], rules: LookRules, sql_known: bool = False
) -> dict[str, str]:
    """field name -> why its values are masked, for every protected field of the Look. A field whose table
    is unknown is masked while any exclusion is configured: it may read an excluded table (the guard's rule
    for an unresolved name), unless the SQL the Look runs is known (`sql_protected` then reads its tables)."""
    protected: dict[str, str] = {}
    for field in fields:
        relation = field["relation"]
        if relation is None:
            if rules.exclusions.has_exclusions and not sql_known:
                protected[field["name"]] = "unverified_table"
                continue
        elif matches_exclusion(relation, rules.exclusions) is not None:
            protected[field["name"]] = f"excluded_table:{relation}"
            continue
        elif (tag := _tagged(relation, field, rules.tagged)) is not None:
            protected[field["name"]] = tag
            continue
        for name in read_names(field):
            found = pii.match(name, rules.pii_patterns)
            if found is not None:
                protected[field["name"]] = f"pii:{found.name}"
                break
    return protected


def _tagged(relation: str, field: LookField, tagged: frozenset[tuple[str, str]]) -> str | None:
    """`pii_tag:<relation>.<column>` when the field reads a column of its table that dbt tags as personal data
    (its own column, or one its SQL reads with `${TABLE}.`), or the whole table is tagged."""
    table = relation.rsplit(".", 1)[-1].strip('"').lower()
    if (table, "*") in tagged:
        return f"pii_tag:{relation}.*"
    sql = field.get("sql")
    own = [] if sql else [field["name"].rsplit(".", 1)[-1]]  # a dimension without sql reads its own column
    for column in [*own, *TABLE_COLUMN.findall(sql or "")]:
        if (table, column.lower()) in tagged:
            return f"pii_tag:{relation}.{column}"
    return None


def sql_protected(sql: str, columns: Sequence[str], rules: LookRules) -> dict[str, str]:
    """column -> why it is masked, decided on the SQL the BI tool runs (parsed in the warehouse's dialect): each
    output column is traced to the table columns it derives from (views, CTEs, subqueries, expressions); an
    excluded table read anywhere masks every column; SQL that cannot be parsed masks every column."""
    import sqlglot
    from sqlglot.errors import SqlglotError

    from ade_platform.lib.sql_protect import ProtectRules, protected_outputs

    dialect = rules.dialect or ""
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect or None) if s is not None]
    except (SqlglotError, ValueError, RecursionError):
        statements = []
    if len(statements) != 1:
        return dict.fromkeys(columns, "unparsed_sql")
    checks = ProtectRules(rules.exclusions, rules.pii_patterns, rules.tagged)
    return protected_outputs(statements[0], dialect, checks, columns, None, rules.default_schema)


def mask_rows(
    rows: Sequence[dict[str, Any]],
    fields: Sequence[LookField],
    protected: dict[str, str],
    pivots: Sequence[str] = (),
) -> tuple[list[dict[str, Any]], list[MaskedColumn]]:
    """The rows with every protected value replaced by MASK, and which columns were masked and why."""
    declared = {f["name"] for f in fields}
    pivot_masked = any(p in protected or p not in declared for p in pivots)
    reasons: dict[str, str] = {}
    out = []
    for row in rows:
        kept: dict[str, Any] = {}
        for key, value in row.items():
            reason = protected.get(key) or (None if key in declared else "undeclared_field")
            if reason is None and pivot_masked and isinstance(value, (dict, list)):
                reason = "pivot_on_masked_field"  # its keys are the pivot dimension's values
            if reason is not None:
                reasons.setdefault(key, reason)
                value = MASK
            kept[key] = value
        out.append(kept)
    for name, reason in protected.items():
        reasons.setdefault(name, reason)  # masked even when no row came back
    return out, [MaskedColumn(column=c, reason=r) for c, r in reasons.items()]


def result_shape(
    rows: Sequence[dict[str, Any]], fields: Sequence[LookField], masked: Sequence[MaskedColumn]
) -> list[ColumnShape]:
    """Columns (declared fields first, then any other key seen), LookML types, null percentages of the
    unmasked ones. Nothing else of the rows survives."""
    types = {f["name"]: f["type"] for f in fields}
    names = list(dict.fromkeys([*types, *(k for r in rows for k in r)]))
    hidden = {m["column"] for m in masked}
    shapes = []
    for name in names:
        pct = None
        if rows and name not in hidden:
            nulls = sum(1 for r in rows if r.get(name) is None)
            pct = round(100.0 * nulls / len(rows), 2)
        shapes.append(ColumnShape(name=name, type=types.get(name) or "UNKNOWN", null_percentage=pct))
    return shapes


def look_body(
    rows: Sequence[dict[str, Any]],
    fields: Sequence[LookField],
    pivots: Sequence[str],
    *,
    rules: LookRules,
    mode: RunLookMode,
    cap: int,
    asked: int,
    sql: str | None = None,
) -> dict[str, Any]:
    """The protected part of a bi_run_look answer: rows (masked) or the shape, row_count, truncated.

    `asked` is the row limit the API was given: one past `cap`, to tell a full result from a truncated one,
    unless the API's own ceiling stopped it (then a result of exactly `cap` rows counts as truncated)."""
    truncated = len(rows) > cap or len(rows) >= asked
    rows = list(rows[:cap])
    protected = protected_columns(fields, rules, sql_known=sql is not None)
    if sql is not None:
        columns = list(dict.fromkeys([*(f["name"] for f in fields), *(k for r in rows for k in r)]))
        for column, reason in sql_protected(sql, columns, rules).items():
            protected.setdefault(column, reason)
    shown, masked = mask_rows(rows, fields, protected, pivots)
    body: dict[str, Any] = {"row_count": len(rows), "truncated": truncated, "masked_columns": masked}
    if mode == "shape":
        return {
            **body,
            "mode": "shape",
            "rows": [],
            "columns": result_shape(rows, fields, masked),
            "redacted": True,
            "note": "row values are withheld (bi.run_look: shape): columns, types, row count and null "
            "percentages only",
        }
    return {**body, "mode": "rows", "rows": shown}
