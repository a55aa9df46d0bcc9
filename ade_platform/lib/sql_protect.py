"""Which tables a query reads and which of its output columns may show values, decided on the parsed statement
that runs (issue 34): the SQL a BI tool generates for a Look, the SQL `warehouse_execute` sends.

- `tables_read`: every table the statement reads, at any depth (joins, subqueries in SELECT/WHERE, CTE bodies),
  CTE names excepted; `excluded_tables` checks them with the Snowflake guard's exclusion matcher.
- `column_sources`: for each output column, the (table, column) pairs it derives from, through CTEs, subqueries,
  views-as-subqueries and expressions (sqlglot's qualifier and lineage, with the warehouse's columns when known
  so a `SELECT *` expands); None when the lineage cannot be resolved.
- `protected_outputs`: output column -> why its values are withheld: a source column in an excluded table, a
  source column (or the output's own name) that is personal data by the PII patterns or tagged `pii` in dbt,
  or a lineage that could not be resolved (fail closed).

Identifiers are compared as the warehouse compares them: sqlglot's parse drops the quotes and the matchers
fold case; PII names are normalized (`"Email Address"`, `EMAIL `, `e_mail` -> email).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ade_platform.lib.dbt import pii
from ade_platform.lib.guard.policy import GuardPolicy, matches_exclusion

Source = tuple[str, str]  # (table as dotted name, column), lower-case
Schema = dict[str, Any]  # sqlglot's nested mapping: [catalog ->] [db ->] table -> {column: type}


@dataclass(frozen=True)
class ProtectRules:
    """What makes a column protected: the exclusions (the guard's policy), the PII name patterns, and the
    (table, column) pairs dbt tags as personal data (short table name, lower-case)."""

    exclusions: GuardPolicy
    pii_patterns: tuple[pii.PiiPattern, ...] = pii.BUILTIN_PATTERNS
    tagged: frozenset[Source] = field(default_factory=frozenset)


def dotted(table: exp.Table) -> str:
    """The table's name as the guard's matcher reads it: every part quoted, so a dot inside a quoted part stays
    inside it (the matcher folds case as Snowflake folds unquoted names)."""
    return ".".join('"' + part.name.replace('"', '""') + '"' for part in table.parts if part.name)


def plain(table: exp.Table) -> str:
    return ".".join(part.name for part in table.parts if part.name).lower()


def tables_read(statement: exp.Expression) -> list[exp.Table]:
    """Every table the statement reads, at any depth; a name a WITH clause defines is not a table (unless it is
    qualified, which a CTE name never is)."""
    ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
    out = []
    for table in statement.find_all(exp.Table):
        if not table.name or not isinstance(table.this, exp.Identifier):
            continue
        if not table.args.get("db") and table.name.lower() in ctes:
            continue
        out.append(table)
    return out


def excluded_tables(statement: exp.Expression, policy: GuardPolicy) -> dict[str, str]:
    """table -> the exclusion it matches, for every table the statement reads."""
    found: dict[str, str] = {}
    if not policy.has_exclusions:
        return found
    for table in tables_read(statement):
        hit = matches_exclusion(dotted(table), policy)
        if hit is not None:
            found.setdefault(plain(table), hit)
    return found


# Table functions that only compute rows (no file, network or catalog read, no SQL text of their own).
_ROW_FUNCTIONS = frozenset({"generate_series", "range", "unnest", "generate_subscripts"})
# Functions, anywhere in a query, that read files, URLs, other databases, the environment or run SQL text.
_READER_PREFIXES = ("read_", "parquet_", "iceberg_", "delta_", "sqlite_", "postgres_", "mysql_", "st_read")
_READER_FUNCTIONS = frozenset(
    {
        "glob",
        "getenv",
        "query",
        "query_table",
        "sniff_csv",
        "current_setting",
        "duckdb_secrets",
        "load_aws_credentials",
    }
)
# A table name that is a file or a URL (DuckDB's replacement scans read `FROM 'orders.csv'` from disk).
_FILE_NAME = re.compile(
    r"[/\\]|://|\.(?:csv|tsv|txt|parquet|json|jsonl|ndjson|gz|zst|xlsx?|arrow|db|duckdb|sqlite)$", re.I
)


def _function_name(node: exp.Expression) -> str:
    return (node.name if isinstance(node, exp.Anonymous) else node.sql_name()).lower()


def outside_reads(statement: exp.Expression) -> list[str]:
    """What in the statement reads outside the warehouse's tables: table functions (other than generating rows),
    functions that read files, URLs, other databases or the environment, or run SQL text of their own, and table
    names that are paths or URLs. An exclusion check cannot see what these read."""
    found: list[str] = []
    for table in statement.find_all(exp.Table):
        this = table.this
        if isinstance(this, exp.Func) and _function_name(this) not in _ROW_FUNCTIONS:
            found.append(f"table function {_function_name(this)}")
        elif isinstance(this, exp.Identifier) and _FILE_NAME.search(this.name):
            found.append("a file or URL as a table")
    for node in statement.find_all(exp.Func):
        name = _function_name(node)
        if name.startswith(_READER_PREFIXES) or name in _READER_FUNCTIONS:
            found.append(f"function {name}")
    return list(dict.fromkeys(found))


def schema_from_tables(tables: Iterable[Mapping[str, Any]]) -> Schema:
    """A sqlglot schema ({schema: {table: {column: type}}}) from a warehouse schema snapshot's `tables`."""
    schema: Schema = {}
    for table in tables:
        columns = {c["name"]: str(c.get("type") or "TEXT") for c in table.get("columns", [])}
        if columns and table.get("schema") and table.get("name"):
            schema.setdefault(table["schema"], {})[table["name"]] = columns
    return schema


def _output_names(statement: exp.Expression) -> list[str]:
    query = statement
    while isinstance(query, exp.SetOperation):
        query = query.left
    return [s.alias_or_name for s in query.selects] if isinstance(query, exp.Query) else []


def column_sources(
    statement: exp.Expression, dialect: str, schema: Schema | None = None, default_db: str | None = None
) -> dict[str, set[Source] | None]:
    """output column -> the (table, column) pairs it derives from; None when its lineage is unresolved. A star
    that stays unexpanded (its table's columns unknown) passes the output's own name through."""
    from sqlglot.errors import SqlglotError
    from sqlglot.lineage import lineage
    from sqlglot.optimizer.qualify import qualify
    from sqlglot.optimizer.scope import build_scope

    try:
        qualified = qualify(
            statement.copy(),
            schema=schema or None,
            dialect=dialect,
            db=default_db,
            validate_qualify_columns=False,
            identify=False,
        )
        scope = build_scope(qualified)
    except (SqlglotError, KeyError, ValueError, RecursionError):
        return dict.fromkeys(_output_names(statement))
    out: dict[str, set[Source] | None] = {}
    names = _output_names(qualified)
    for name in names:
        if name == "*" or not name:
            continue
        try:
            node = lineage(name, qualified, schema=schema or None, dialect=dialect, scope=scope, copy=False)
        except (SqlglotError, KeyError, ValueError, RecursionError, AttributeError):
            out[name] = None
            continue
        out[name] = _leaves(node, name)
    if "*" in names or any(isinstance(s, exp.Star) for s in getattr(qualified, "selects", [])):
        out["*"] = None  # columns the star brings are known only from the result
    return out


def _leaves(root: Any, output: str) -> set[Source]:
    """The table columns under a lineage node. A star left unexpanded is a leaf named `*`: the column is the name
    its parent asked of it (`c.e_mail` in `WITH c AS (SELECT * ...) SELECT e_mail ...`), which a star passes
    through unchanged."""
    sources: set[Source] = set()
    stack: list[tuple[Any, str]] = [(root, output)]
    seen = 0
    while stack and seen < 10_000:
        node, asked = stack.pop()
        seen += 1
        name = _last_part(node.name)
        if node.downstream:
            stack.extend((child, asked if name == "*" else name) for child in node.downstream)
            continue
        if isinstance(node.source, exp.Table):
            sources.add((plain(node.source), (asked if name == "*" else name).lower()))
    return sources


_LAST_PART = re.compile(r'(?:"((?:[^"]|"")*)"|`([^`]*)`|([^."`]+))$')


def _last_part(name: str) -> str:
    """The column of a lineage node's name (`p."Full Name"` -> `Full Name`): quotes dropped as the parser drops
    them, so the name is matched as the warehouse stores it."""
    match = _LAST_PART.search(name.strip())
    if match is None:
        return name
    quoted, ticked, bare = match.groups()
    return quoted.replace('""', '"') if quoted is not None else ticked if ticked is not None else bare


def _pii_reason(name: str, rules: ProtectRules) -> str | None:
    found = pii.match(name.strip(), rules.pii_patterns)
    return f"pii:{found.name}" if found is not None else None


def protected_outputs(
    statement: exp.Expression,
    dialect: str,
    rules: ProtectRules,
    columns: Sequence[str],
    schema: Schema | None = None,
    default_db: str | None = None,
) -> dict[str, str]:
    """result column -> why its values are withheld (`columns`: the result's column names, as returned)."""
    excluded = excluded_tables(statement, rules.exclusions)
    sources = column_sources(statement, dialect, schema, default_db)
    by_lower = {k.lower(): v for k, v in sources.items()}
    star = "*" in sources
    reasons: dict[str, str] = {}
    for column in columns:
        key = column.lower()
        if key in by_lower:
            derived = by_lower[key]
            if derived is None:
                reasons[column] = "unresolved_lineage"
                continue
        elif star:
            derived = set()  # brought by a star: its own name is its source column's name (checked below)
        else:
            reasons[column] = "unresolved_lineage"
            continue
        reason = _reason(column, derived, excluded, rules)
        if reason is not None:
            reasons[column] = reason
    if excluded:
        # an excluded table read anywhere (a filter, a join) decides what rows come back: nothing is shown
        first = next(iter(excluded))
        for column in columns:
            reasons.setdefault(column, f"excluded_table_in_query:{first}")
    return reasons


def _reason(
    column: str, derived: set[Source], excluded: Mapping[str, str], rules: ProtectRules
) -> str | None:
    for table, _ in sorted(derived):
        if table in excluded:
            return f"excluded_table:{table}"
    for table, source_column in sorted(derived):
        short = table.rsplit(".", 1)[-1]
        if (short, source_column) in rules.tagged or (short, "*") in rules.tagged:
            return f"pii_tag:{table}.{source_column}"
    for name in [column, *sorted(c for _, c in derived)]:
        reason = _pii_reason(name, rules)
        if reason is not None:
            return reason
    return None


def tagged_columns(relations: Iterable[Any], terms: Sequence[str] = pii.DEFAULT_TAGS) -> frozenset[Source]:
    """(table, column) pairs dbt tags as personal data (a column's tags or meta, or the whole relation's tags:
    then the column is `*`), from `ade_platform.lib.warehouse.manifest.Relation`s."""
    lowered = tuple(t.lower() for t in terms)
    found: set[Source] = set()
    for relation in relations:
        table = str(relation.identifier).lower()
        if pii.has_pii_tag({"tags": list(relation.tags)}, lowered):
            found.add((table, "*"))
        for column in relation.columns:
            if pii.has_pii_tag({"tags": list(column.tags), "meta": column.meta}, lowered):
                found.add((table, column.name.lower()))
    return frozenset(found)


def mask_rows(
    rows: Sequence[Mapping[str, Any]], protected: Mapping[str, str], mask: str
) -> list[dict[str, Any]]:
    """The rows with every protected column's value replaced by `mask`."""
    return [{k: (mask if k in protected else v) for k, v in row.items()} for row in rows]
