"""`SELECT *` in model SQL, found on the sqlglot AST (not by regex), with where each star sits.

A star is reported with its scope: `final` (the outermost query), `cte` (inside a WITH clause: the usual
dbt "import CTE" pattern `with source as (select * from {{ source(...) }})`) or `subquery`. What matters
for schema drift is whether the model's *output* columns are whatever an upstream relation has:
`propagates_upstream_columns` follows the final star through CTEs to a physical relation. `select * from
final` over a CTE with an explicit column list does not propagate; `select * from {{ ref('orders') }}` does.
"""

from __future__ import annotations

import re
from typing import Any

from ade_platform.lib.dbt import sql_source

_REGEX_STAR = re.compile(r"\bselect\s+(?:distinct\s+)?(?:top\s+\d+\s+)?(?:[\w\"`\[\]]+\.)?\*", re.IGNORECASE)
_LINE_STAR = re.compile(
    r"(?:\bselect\b|,)\s*(?:[\w\"`\[\]]+\.)?\*(?!\*)|^\s*(?:[\w\"`]+\.)?\*\s*(?:,|$)", re.I
)
_MAX_DEPTH = 25


def _is_star(projection: Any) -> bool:
    from sqlglot import exp

    return isinstance(projection, exp.Star) or (
        isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)
    )


def _scope(select: Any) -> tuple[str, str | None]:
    from sqlglot import exp

    node = select.parent
    while node is not None:
        if isinstance(node, exp.CTE):
            return "cte", node.alias_or_name
        if isinstance(node, exp.Subquery):
            return "subquery", node.alias_or_name or None
        node = node.parent
    return "final", None


def _sources(select: Any) -> dict[str, str]:
    """alias (or name) -> table name, for the FROM and JOIN tables of one SELECT."""
    from sqlglot import exp

    out: dict[str, str] = {}
    from_ = select.args.get("from") or select.args.get("from_")
    items = [from_.this] if from_ is not None else []
    items += [join.this for join in select.args.get("joins") or ()]
    for item in items:
        if isinstance(item, exp.Table):
            out[item.alias_or_name.lower()] = ".".join(p.name for p in item.parts).lower()
        elif isinstance(item, exp.Subquery):
            out[(item.alias_or_name or "").lower()] = "(subquery)"
    return out


def _star_targets(select: Any, star: Any) -> list[str]:
    sources = _sources(select)
    qualifier = star.table if not _is_bare(star) else None
    if qualifier:
        return [sources.get(qualifier.lower(), qualifier.lower())]
    return list(sources.values())


def _is_bare(star: Any) -> bool:
    from sqlglot import exp

    return isinstance(star, exp.Star)


def _propagates(select: Any, ctes: dict[str, Any], depth: int = 0) -> bool:
    """True when a star in `select` reaches a physical relation (through CTEs and subqueries)."""
    from sqlglot import exp

    if depth > _MAX_DEPTH:
        return False
    if isinstance(select, exp.Union):
        return _propagates(select.left, ctes, depth + 1) or _propagates(select.right, ctes, depth + 1)
    if isinstance(select, exp.Subquery):
        return _propagates(select.this, ctes, depth + 1)
    if not isinstance(select, exp.Select):
        return False
    for projection in select.expressions:
        if not _is_star(projection):
            continue
        for target in _star_targets(select, projection):
            if target == "(subquery)":
                from_ = select.args.get("from") or select.args.get("from_")
                sub = from_.this if from_ is not None else None
                if sub is not None and _propagates(sub, ctes, depth + 1):
                    return True
            elif target in ctes:
                if _propagates(ctes[target], ctes, depth + 1):
                    return True
            else:
                return True
    return False


def _snippet(sql: str, last: bool = False) -> str:
    """The first (or last) line with a star projection, comments ignored; at most 200 characters."""
    lines = [line.split("--", 1)[0].rstrip() for line in sql.splitlines()]
    hits = [line.strip() for line in lines if line.strip() and _LINE_STAR.search(line)]
    if hits:
        return (hits[-1] if last else hits[0])[:200]
    return next((line.strip()[:200] for line in lines if line.strip()), "")


def analyze_sql(sql: str, dialect: str | None = None) -> dict[str, Any] | None:
    """The stars of one model's SQL; None when it has none."""
    if "*" not in sql:
        return None
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError

    try:
        statements = [s for s in sqlglot.parse(sql, dialect=dialect) if s is not None]
    except (SqlglotError, RecursionError, ValueError):
        statements = []
    if not statements:
        count = len(_REGEX_STAR.findall(sql))
        if not count:
            return None
        return {
            "parsed": False,
            "occurrence_count": count,
            "occurrences": [],
            "final_select_star": None,
            "propagates_upstream_columns": None,
            "compiled_sql_snippet": _snippet(sql),
        }
    tree = statements[-1]
    ctes = {cte.alias_or_name.lower(): cte.this for cte in tree.find_all(exp.CTE)}
    occurrences = []
    for select in tree.find_all(exp.Select):
        for projection in select.expressions:
            if not _is_star(projection):
                continue
            scope, name = _scope(select)
            targets = _star_targets(select, projection)
            occurrences.append(
                {
                    "scope": scope,
                    "cte_name": name if scope == "cte" else None,
                    "qualifier": None if _is_bare(projection) else projection.table,
                    "selects_from": [("cte:" + t if t in ctes else t) for t in targets],
                }
            )
    if not occurrences:
        return None
    order = {"final": 0, "subquery": 1, "cte": 2}
    occurrences.sort(key=lambda o: order[o["scope"]])
    final = [o for o in occurrences if o["scope"] == "final"]
    root = tree.this if isinstance(tree, exp.Subquery) else tree
    return {
        "parsed": True,
        "occurrence_count": len(occurrences),
        "occurrences": occurrences,
        "final_select_star": bool(final),
        "propagates_upstream_columns": bool(final) and _propagates(root, ctes),
        "compiled_sql_snippet": _snippet(sql, last=bool(final)),
    }


def scan_models(
    models: list[tuple[str, str | None, str | None, str | None, str]], dialect: str | None
) -> list[dict[str, Any]]:
    """models: (node_id, name, schema, sql, sql_source) -> one finding per model that selects a star."""
    findings = []
    for node_id, name, schema, sql, origin in models:
        if not sql:
            continue
        result = analyze_sql(sql, dialect)
        if result is None:
            continue
        findings.append(
            {"model_name": name, "node_id": node_id, "schema": schema, "sql_source": origin, **result}
        )
    findings.sort(
        key=lambda f: (not f["propagates_upstream_columns"], not f["final_select_star"], f["node_id"])
    )
    return findings


def scan_project(
    sql_index: dict[str, dict[str, Any]], extra: dict[str, str], index: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every model of a project (its SQL index, compiled SQL borrowed from the last build, its lineage index)
    that selects a star. The one computation behind the Dagster report asset and the on-demand tool path."""
    dialect = sql_source.dialect_for(index.get("adapter_type"))
    rows = []
    for uid, entry in sql_index.items():
        rec = index["nodes"].get(uid) or {}
        if rec.get("resource_type") != "model":
            continue
        sql, origin = sql_source.node_sql(entry, extra, uid)
        rows.append((uid, rec.get("name"), rec.get("schema"), sql, origin))
    return scan_models(rows, dialect)
