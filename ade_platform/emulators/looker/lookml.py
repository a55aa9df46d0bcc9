"""The SQL the emulated Looker generates for a query: LookML field references resolved as Looker resolves them.

`${TABLE}` is the field's own view (its alias in the FROM clause), `${field}` another field of the same view and
`${view.field}` a field of another view, resolved recursively; a view the query reaches (through a selected
field, a filter or a reference) is LEFT JOINed on its explore's `sql_on`. A view's table is its `sql_table_name`,
a table name or a derived table's SQL in parentheses. Result columns are aliased with the field names
(`"orders.order_id"`), as Looker aliases them.
"""

from __future__ import annotations

import re
from typing import Any

from ade_platform.emulators.looker import content

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:\.([A-Za-z_][A-Za-z0-9_]*))?\}")
_MAX_DEPTH = 20


class _Resolver:
    def __init__(self, explore: str):
        self.explore = explore
        self.joins = dict(content.JOINS.get(explore, []))
        self.used: list[str] = []  # joined views the SQL reaches, in the order first reached

    def view(self, name: str) -> dict[str, Any]:
        if name != self.explore and name not in self.joins:
            raise KeyError(name)
        if name != self.explore and name not in self.used:
            self.used.append(name)
        return content.MODELS["jaffle"][name]

    def field(self, view: str, name: str, depth: int = 0) -> tuple[str, str]:
        """(kind, SQL) of view.name; KeyError when the explore cannot reach it."""
        if depth > _MAX_DEPTH:
            raise KeyError(f"{view}.{name}")
        fields = self.view(view)
        for kind in ("dimensions", "measures"):
            if name in fields[kind]:
                return kind, self.expand(fields[kind][name][1], view, depth)
        raise KeyError(f"{view}.{name}")

    def expand(self, sql: str, view: str, depth: int) -> str:
        def replace(match: re.Match[str]) -> str:
            first, second = match.group(1), match.group(2)
            if second is None:
                return view if first == "TABLE" else self.field(view, first, depth + 1)[1]
            return self.field(first, second, depth + 1)[1]

        return _REFERENCE.sub(replace, sql)

    def named(self, field: str) -> tuple[str, str]:
        view, _, name = field.partition(".")
        return self.field(view, name)


def _filter_sql(expr: str, value: str, params: list[Any]) -> str:
    """A Looker string filter expression: `a`, `a,b` (any of), `-a` (not)."""
    negate = value.startswith("-")
    values = [v.strip() for v in (value[1:] if negate else value).split(",") if v.strip()]
    params.extend(values)
    marks = ", ".join("?" for _ in values)
    return f"{expr} {'NOT IN' if negate else 'IN'} ({marks})"


def compile_query(query_id: int, limit: int) -> tuple[str, list[Any], list[str]]:
    """The SQL Looker would generate for a saved query: (sql, parameters, result field names)."""
    return compile_query_body(content.QUERIES[query_id], limit)


def compile_query_body(q: dict[str, Any], limit: int) -> tuple[str, list[Any], list[str]]:
    """The SQL of a query given whole (run_inline_query's WriteQuery: view, fields, filters, sorts); KeyError
    for a field its explore does not reach."""
    explore = q["view"]
    resolve = _Resolver(explore)
    params: list[Any] = []
    select, group = [], []
    for i, field in enumerate(q["fields"], start=1):
        kind, expr = resolve.named(field)
        select.append(f'{expr} AS "{field}"')
        if kind == "dimensions":
            group.append(str(i))
    where = [_filter_sql(resolve.named(f)[1], v, params) for f, v in (q.get("filters") or {}).items()]
    table = content.MODELS["jaffle"][explore]["sql_table_name"]
    sql = f"SELECT {', '.join(select)} FROM {table} AS {explore}"
    done: list[str] = []
    while len(done) < len(resolve.used):  # an ON clause may reach a further view
        view = resolve.used[len(done)]
        on = resolve.expand(resolve.joins[view], explore, 0)
        sql += f" LEFT JOIN {content.MODELS['jaffle'][view]['sql_table_name']} AS {view} ON {on}"
        done.append(view)
    if where:
        sql += " WHERE " + " AND ".join(where)
    if group and len(group) < len(q["fields"]):
        sql += " GROUP BY " + ", ".join(group)
    orders = []
    for sort in q.get("sorts") or []:
        field, _, direction = sort.partition(" ")
        orders.append(f'"{field}" {"DESC" if direction.strip().lower() == "desc" else "ASC"}')
    if orders:
        sql += " ORDER BY " + ", ".join(orders)
    sql += f" LIMIT {int(limit)}"
    return sql, params, q["fields"]
