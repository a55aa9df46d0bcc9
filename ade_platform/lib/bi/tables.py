"""Which warehouse tables a tile reads: sqlglot over its SQL, or the explore's `sql_table_name`.

Names come back as the warehouse spells them (unquoted), completed with the default database and schema of
the warehouse the BI tool reads, so they match the warehouse snapshots and the dbt relations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ade_platform.lib.bi.shapes import TableRef

if TYPE_CHECKING:
    from sqlglot import exp

# sqlglot is imported inside the functions that parse: the gateway imports this module when the bi-api toolset
# is mounted, and a cached answer must not pay for the parser (the cold-start budget).

# sqlglot dialect of each warehouse type; case rule for unquoted identifiers (Snowflake folds to upper).
_DIALECTS = {"duckdb": "duckdb", "snowflake": "snowflake", "bigquery": "bigquery"}


@dataclass(frozen=True)
class Naming:
    """How unqualified names resolve in the warehouse behind a BI tool."""

    dialect: str | None = None  # a warehouse type (duckdb, snowflake, bigquery) or None for generic SQL
    database: str | None = None
    schema: str | None = None

    @property
    def sqlglot_dialect(self) -> str | None:
        return _DIALECTS.get(self.dialect or "")


def _ident(node: exp.Expression | None, naming: Naming) -> str | None:
    from sqlglot import exp

    if node is None:
        return None
    name = node.name
    if not name:
        return None
    quoted = isinstance(node, exp.Identifier) and node.quoted
    if naming.dialect == "snowflake" and not quoted:
        return name.upper()
    return name


def _ref(database: str | None, schema: str | None, name: str, naming: Naming, how: str) -> TableRef:
    database = database or naming.database
    schema = schema or naming.schema
    relation = ".".join(p for p in (database, schema, name) if p)
    return TableRef(relation=relation, database=database, schema=schema, name=name, how=how)  # type: ignore[typeddict-item]


def tables_in_sql(sql: str, naming: Naming) -> list[TableRef]:
    """The tables (and views) a SELECT reads, CTE names left out; [] when the SQL does not parse."""
    import sqlglot

    from ade_platform.lib.warehouse.sql import relation_tables

    try:
        trees = sqlglot.parse(sql, read=naming.sqlglot_dialect)
    except sqlglot.errors.ParseError:
        return []
    found: dict[str, TableRef] = {}
    for tree in trees:
        for table in relation_tables(tree) if tree is not None else ():
            name = _ident(table.this, naming) or table.name
            db = _ident(table.args.get("db"), naming)
            catalog = _ident(table.args.get("catalog"), naming)
            ref = _ref(catalog, db, name, naming, "sql_parse")
            found.setdefault(ref["relation"].lower(), ref)
    return sorted(found.values(), key=lambda r: r["relation"])


def table_from_name(name: str, naming: Naming, how: str) -> TableRef | None:
    """A dotted table name (an explore's sql_table_name, a Metabase table's schema and name) as a TableRef."""
    import sqlglot

    try:
        table = sqlglot.exp.to_table(name.strip(), dialect=naming.sqlglot_dialect)
    except (sqlglot.errors.ParseError, ValueError):
        return None
    base = _ident(table.this, naming)
    if not base:
        return None
    return _ref(
        _ident(table.args.get("catalog"), naming), _ident(table.args.get("db"), naming), base, naming, how
    )


def count_rows_sql(ref: TableRef, naming: Naming) -> str:
    """SELECT COUNT(*) over one table, quoted for the warehouse's dialect."""
    from sqlglot import exp

    table = exp.table_(ref["name"], db=ref["schema"], catalog=ref["database"], quoted=True)
    return exp.select(exp.Count(this=exp.Star()).as_("row_count")).from_(table).sql(naming.sqlglot_dialect)
