"""What a failure message says went wrong: a structured symptom from a tile's, a query's or a dbt node's error.

The message is the database's own (a BI tool shows it on the broken tile; dbt writes it into run results), so the
patterns follow each warehouse's wording: DuckDB, Snowflake, BigQuery and Postgres, plus the BI tools' own
(Looker's LookML field errors, a tile that did not finish in time). The kind says what is missing or refused,
and the names are the columns and relations the message mentions, lower-cased, so a cause upstream can be
matched against them ("the column the tile misses is the one renamed in its table").

Messages reach here already made safe (first line, single-quoted values masked): a name that stood in single
quotes may be gone, and the kind alone is then what matches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ErrorKind = Literal[
    "missing_column",
    "missing_relation",
    "type_mismatch",
    "permission",
    "timeout",
    "syntax",
    "empty",
    "other",
]

# A name as the messages quote it; a masked one (`'…'`, `'?'`) still matches, and gives no name.
_NAME = r"[\"'`]?(?P<{g}>[A-Za-z_][\w$]*(?:\.[A-Za-z_][\w$]*)*|…|\?)[\"'`]?"


def _name(group: str) -> str:
    return _NAME.format(g=group)


# (kind, pattern). Order matters: the first match wins, specific before general.
_PATTERNS: list[tuple[ErrorKind, re.Pattern[str]]] = [
    # --- missing column ---------------------------------------------------------------------------------------
    # DuckDB: Binder Error: Referenced column "x" not found in FROM clause!
    ("missing_column", re.compile(r"referenced column " + _name("column") + r" not found", re.I)),
    # DuckDB: Table "t" does not have a column named "x" / Values list "t" does not have a column named "x"
    (
        "missing_column",
        re.compile(
            r"(?:table|values list) "
            + _name("relation")
            + r" does not have a column named "
            + _name("column"),
            re.I,
        ),
    ),
    # Snowflake: SQL compilation error: error line 1 at position 7 invalid identifier 'X'
    ("missing_column", re.compile(r"invalid identifier " + _name("column"), re.I)),
    # BigQuery: Unrecognized name: x at [1:8] / Name x not found inside t at [...]
    ("missing_column", re.compile(r"unrecognized name: " + _name("column"), re.I)),
    (
        "missing_column",
        re.compile(r"name " + _name("column") + r" not found inside " + _name("relation"), re.I),
    ),
    # Postgres: column "x" does not exist / column t.x does not exist
    ("missing_column", re.compile(r"column " + _name("column") + r" does not exist", re.I)),
    # Looker: LookML error: field 'view.x' does not exist in explore 'e'
    ("missing_column", re.compile(r"field " + _name("column") + r" does not exist", re.I)),
    ("missing_column", re.compile(r"\bcolumn " + _name("column") + r" not found", re.I)),
    # --- missing relation -------------------------------------------------------------------------------------
    # DuckDB: Catalog Error: Table with name x does not exist!
    (
        "missing_relation",
        re.compile(r"(?:table|view) with name " + _name("relation") + r" does not exist", re.I),
    ),
    # DuckDB: Referenced table "x" not found!
    ("missing_relation", re.compile(r"referenced table " + _name("relation") + r" not found", re.I)),
    # Snowflake: Object 'DB.S.T' does not exist or not authorized.
    ("missing_relation", re.compile(r"object " + _name("relation") + r" does not exist", re.I)),
    # BigQuery: Not found: Table p:d.t was not found in location US / Not found: Dataset p:d
    (
        "missing_relation",
        re.compile(r"not found: (?:table|dataset|view) [\w-]+[:.]" + _name("relation"), re.I),
    ),
    # Postgres: relation "s.t" does not exist
    ("missing_relation", re.compile(r"relation " + _name("relation") + r" does not exist", re.I)),
    # --- types ------------------------------------------------------------------------------------------------
    # DuckDB: No function matches the given name and argument types 'sum(VARCHAR)'
    (
        "type_mismatch",
        re.compile(r"no function matches|could not convert|conversion error|cannot compare values", re.I),
    ),
    # BigQuery: No matching signature for aggregate function SUM for argument types: STRING
    ("type_mismatch", re.compile(r"no matching signature|cannot be cast|invalid cast", re.I)),
    # Postgres: function sum(text) does not exist / operator does not exist: integer = text
    ("type_mismatch", re.compile(r"(?:function|operator) .*does not exist|invalid input syntax for", re.I)),
    # Snowflake: Numeric value 'x' is not recognized / invalid argument types for function
    ("type_mismatch", re.compile(r"is not recognized|invalid argument types", re.I)),
    # --- permission -------------------------------------------------------------------------------------------
    (
        "permission",
        re.compile(
            r"permission denied|insufficient privileges|access denied|not authorized|forbidden|"
            r"does not have permission",
            re.I,
        ),
    ),
    # --- timeout ----------------------------------------------------------------------------------------------
    (
        "timeout",
        re.compile(
            r"timed? ?out|timeout|did not finish within|canceling statement|was cancell?ed after|"
            r"exceeded resource limits",
            re.I,
        ),
    ),
    # --- syntax / compilation ---------------------------------------------------------------------------------
    ("syntax", re.compile(r"parser error|syntax error|compilation error|parsing error", re.I)),
]


@dataclass(frozen=True)
class ErrorShape:
    """A failure message reduced to what it says: the kind and the names it mentions (lower-cased)."""

    kind: ErrorKind
    columns: tuple[str, ...] = ()
    relations: tuple[str, ...] = ()
    message: str | None = field(default=None, compare=False)

    def as_dict(self) -> dict[str, object]:
        return {"error_kind": self.kind, "columns": list(self.columns), "relations": list(self.relations)}


def _clean(name: str | None) -> str | None:
    if not name:
        return None
    name = name.strip().strip("\"'`").lower()
    return name if name and name not in {"…", "?"} else None


def parse_error(message: str | None, status: str | None = None) -> ErrorShape | None:
    """The structured symptom of one failure message (None when there is no failure).

    `status` "empty" (a tile that rendered no row) is a symptom without a message.
    """
    if not message:
        return ErrorShape("empty") if status == "empty" else None
    text = message.strip()
    for kind, pattern in _PATTERNS:
        match = pattern.search(text)
        if match is None:
            continue
        groups = match.groupdict()
        column = _clean(groups.get("column"))
        relation = _clean(groups.get("relation"))
        columns: tuple[str, ...] = ()
        if column:
            # "t.x" names a column x of t (Postgres, BigQuery, Looker's view.field)
            *qualifier, bare = column.split(".")
            columns = (bare,)
            if qualifier and relation is None:
                relation = ".".join(qualifier)
        return ErrorShape(kind, columns, (relation,) if relation else (), text)
    return ErrorShape("other", message=text)


def mentions_relation(shape: ErrorShape, relation: str) -> bool:
    """Whether the message names this relation (by its full or trailing name: `orders`, `main.orders`)."""
    rel = relation.lower()
    return any(rel == r or rel.endswith("." + r) or r.endswith("." + rel) for r in shape.relations)


def mentions_text(message: str | None, name: str) -> bool:
    """Whether a name occurs in a message as a word (for messages whose wording no pattern knows)."""
    if not message or not name:
        return False
    return re.search(r"(?<![\w$])" + re.escape(name.lower()) + r"(?![\w$])", message.lower()) is not None
