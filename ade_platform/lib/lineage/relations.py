"""Warehouse relation names: normalized keys, the tables a SQL statement reads, and matching partial names.

A dbt model, a warehouse table and a BI tile's SQL name the same relation in different spellings
(`"ANALYTICS"."MAIN"."ORDERS"`, `analytics.main.orders`, `orders`). Keys are case-folded for warehouses that fold
unquoted identifiers (DuckDB, Postgres, Snowflake; Snowflake's quoted mixed-case names are rare in analytics
schemas), and kept as written for BigQuery, whose dataset and table names are case-sensitive.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# sqlglot is imported in the functions that parse: the lineage toolset loads this module at gateway start.

_DIALECTS = {"duckdb": "duckdb", "snowflake": "snowflake", "bigquery": "bigquery", "postgres": "postgres"}


@dataclass(frozen=True)
class RelationKey:
    database: str | None
    schema: str | None
    name: str

    @property
    def dotted(self) -> str:
        return ".".join(p for p in (self.database, self.schema, self.name) if p)


def _clean(part: str | None) -> str | None:
    if part is None:
        return None
    part = part.strip().strip('"`[]')
    return part or None


def make_key(
    database: str | None, schema: str | None, name: str, warehouse_type: str | None = None
) -> RelationKey:
    db, sch, nm = _clean(database), _clean(schema), _clean(name) or ""
    if warehouse_type != "bigquery":
        db, sch, nm = (db.lower() if db else None), (sch.lower() if sch else None), nm.lower()
    return RelationKey(db, sch, nm)


def parse_relation(text: str, warehouse_type: str | None = None) -> RelationKey:
    """`db.schema.name`, `schema.name` or `name`, quoted or not."""
    import sqlglot
    from sqlglot import exp

    dialect = _DIALECTS.get(warehouse_type or "")
    try:
        table = exp.to_table(text, dialect=dialect)
        return make_key(table.catalog or None, table.db or None, table.name, warehouse_type)
    except (sqlglot.errors.ParseError, ValueError, AttributeError):
        parts = [p for p in text.replace("`", "").split(".") if p]
        parts = [None] * (3 - len(parts)) + parts[-3:]
        return make_key(parts[0], parts[1], parts[2] or text, warehouse_type)


def tables_in_sql(sql: str, warehouse_type: str | None = None) -> list[RelationKey]:
    """The relations a statement reads (CTE names excluded), each once; [] when it cannot be parsed."""
    import sqlglot

    from ade_platform.lib.warehouse.sql import relation_tables

    dialect = _DIALECTS.get(warehouse_type or "")
    try:
        statements = sqlglot.parse(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return []
    seen: dict[RelationKey, None] = {}
    for statement in statements:
        for table in relation_tables(statement) if statement is not None else ():
            seen[make_key(table.catalog or None, table.db or None, table.name, warehouse_type)] = None
    return list(seen)


class RelationIndex:
    """Known relations, found again from a full or partial name (the defaults fill what a name leaves out)."""

    def __init__(self, keys: Iterable[RelationKey]):
        self._full: dict[tuple[str | None, str | None, str], RelationKey] = {}
        self._by_schema_name: dict[tuple[str | None, str], list[RelationKey]] = {}
        self._by_name: dict[str, list[RelationKey]] = {}
        for key in keys:
            self.add(key)

    def add(self, key: RelationKey) -> None:
        if (key.database, key.schema, key.name) in self._full:
            return
        self._full[(key.database, key.schema, key.name)] = key
        self._by_schema_name.setdefault((key.schema, key.name), []).append(key)
        self._by_name.setdefault(key.name, []).append(key)

    def __contains__(self, key: RelationKey) -> bool:
        return (key.database, key.schema, key.name) in self._full

    def resolve(
        self, key: RelationKey, default_database: str | None = None, default_schema: str | None = None
    ) -> RelationKey | None:
        """The known relation a (possibly partial) name means, or None when unknown or ambiguous."""
        exact = self._full.get((key.database or default_database, key.schema or default_schema, key.name))
        if exact is not None:
            return exact
        if key.schema is not None:
            candidates = self._by_schema_name.get((key.schema, key.name), [])
            if key.database is not None:
                candidates = [c for c in candidates if c.database == key.database]
        else:
            candidates = self._by_name.get(key.name, [])
            if default_schema is not None and len(candidates) > 1:
                candidates = [c for c in candidates if c.schema == default_schema] or candidates
        return candidates[0] if len(candidates) == 1 else None


def _columns_in_sql(sql: str, dialect: str | None) -> set[str]:
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=_DIALECTS.get(dialect or "", dialect))
    except sqlglot.errors.SqlglotError:
        return set()
    aliases = {a.alias.lower() for a in tree.find_all(exp.Alias) if a.alias}
    return {c.name.lower() for c in tree.find_all(exp.Column) if c.name and c.name.lower() not in aliases}


def missing_columns(sql: str, table_columns: list[set[str]], dialect: str | None = None) -> list[str]:
    """Columns the SQL names that none of the tables it reads has (empty when a table's columns are unknown)."""
    if not table_columns or any(not cols for cols in table_columns):
        return []
    known = set().union(*table_columns)
    return sorted(c for c in _columns_in_sql(sql, dialect) if c not in known and c != "*")
