"""Column-level lineage of a model with sqlglot: which upstream columns one output column derives from.

The model's SQL (compiled when available, see sql_source) is qualified against a schema built from its
parents' columns (catalog first, declared YAML columns otherwise), so `SELECT *` expands to real columns.
The answer is honest: `resolved: false` with a reason when the SQL cannot be parsed, the column cannot be
traced, or an upstream's columns are unknown.
"""

from __future__ import annotations

from typing import Any

from ade_platform.lib.dbt.sql_source import REF_SCHEMA


def _relation_parts(rec: dict[str, Any], uid: str, dialect: str | None, raw: bool) -> tuple[str, ...] | None:
    if raw:
        if rec.get("resource_type") == "source":
            return (str(rec.get("source_name") or ""), str(rec.get("name") or ""))
        return (REF_SCHEMA, str(rec.get("name") or uid.rsplit(".", 1)[-1]))
    relation = rec.get("relation_name")
    if relation:
        from sqlglot import exp
        from sqlglot.errors import SqlglotError

        try:
            table = exp.to_table(relation, dialect=dialect)
            return tuple(p.name for p in table.parts)
        except (SqlglotError, ValueError):
            pass
    parts = [rec.get("database"), rec.get("schema"), rec.get("alias") or rec.get("name")]
    return tuple(str(p) for p in parts if p) or None


def known_columns(uid: str, index: dict[str, Any], catalog: dict[str, Any] | None) -> list[str]:
    """The node's columns as the catalog observed them, else as declared (empty when neither knows)."""
    return list(_columns_of(uid, index, catalog))


def _columns_of(uid: str, index: dict[str, Any], catalog: dict[str, Any] | None) -> dict[str, str]:
    entry = ((catalog or {}).get("entries") or {}).get(uid)
    if entry and entry["columns"]:
        return {c["column_name"]: c.get("data_type") or "UNKNOWN" for c in entry["columns"]}
    return {
        c["name"]: c.get("data_type") or "UNKNOWN" for c in index["columns"].get(uid, ()) if c.get("name")
    }


def _key(parts: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(p.lower().strip('"`[]') for p in parts)


def _is_passthrough(expression: Any) -> bool:
    from sqlglot import exp

    if isinstance(expression, exp.Alias):
        expression = expression.this
    return isinstance(expression, exp.Column | exp.Table)


def column_lineage(
    index: dict[str, Any],
    catalog: dict[str, Any] | None,
    node_id: str,
    column: str,
    sql: str | None,
    sql_source: str,
    dialect: str | None,
) -> dict[str, Any]:
    """Trace `column` of `node_id` to the upstream columns it is computed from."""
    rec = index["nodes"].get(node_id) or {}
    body: dict[str, Any] = {
        "node_id": node_id,
        "model_name": rec.get("name"),
        "column_name": column,
        "sql_source": sql_source,
        "dialect": dialect,
        "resolved": False,
        "reason": None,
        "upstream": [],
    }
    if not sql:
        body["reason"] = "no SQL for this node (a Python model, a seed, or a node without code)"
        return body
    raw = sql_source == "raw_rendered"
    schema: dict[str, Any] = {}
    by_relation: dict[tuple[str, ...], str] = {}
    unknown_parents = []
    depth = None
    for parent in index["parents"].get(node_id, ()):
        prec = index["nodes"].get(parent) or {}
        parts = _relation_parts(prec, parent, dialect, raw)
        if not parts:
            continue
        by_relation[_key(parts)] = parent
        by_relation.setdefault(_key(parts[-1:]), parent)
        cols = _columns_of(parent, index, catalog)
        if not cols:
            unknown_parents.append(parent)
            continue
        if depth is not None and len(parts) != depth:
            continue  # mixed qualification depths cannot share one sqlglot schema
        depth = len(parts)
        level = schema
        for part in parts[:-1]:
            level = level.setdefault(part, {})
        level[parts[-1]] = cols

    import sqlglot
    from sqlglot.errors import SqlglotError
    from sqlglot.lineage import lineage

    try:
        root = lineage(column, sql, schema=schema or None, dialect=dialect)
    except (SqlglotError, KeyError, ValueError, RecursionError) as exc:
        body["reason"] = f"sqlglot could not trace the column: {str(exc).splitlines()[0][:300]}"
        if unknown_parents:
            body["reason"] += f" (columns unknown for {', '.join(unknown_parents[:5])})"
        return body

    upstream: dict[tuple[str | None, str], dict[str, Any]] = {}
    unresolved_star = False

    def walk(node: Any, passthrough: bool) -> None:
        nonlocal unresolved_star
        passthrough = passthrough and _is_passthrough(node.expression)
        if node.downstream:
            for child in node.downstream:
                walk(child, passthrough)
            return
        if not isinstance(node.source, sqlglot.exp.Table):
            return
        name = node.name.rsplit(".", 1)[-1]
        if name == "*":
            unresolved_star = True
        parts = tuple(p.name for p in node.source.parts)
        parent = by_relation.get(_key(parts)) or by_relation.get(_key(parts[-1:]))
        key = (parent or ".".join(parts), name)
        entry = upstream.setdefault(
            key,
            {
                "node_id": parent,
                "name": (index["nodes"].get(parent) or {}).get("name") if parent else None,
                "relation": ".".join(parts),
                "column_name": name,
                "transformation": "direct" if passthrough else "derived",
            },
        )
        if not passthrough:
            entry["transformation"] = "derived"

    walk(root, True)
    body["upstream"] = sorted(upstream.values(), key=lambda u: (u["node_id"] or "", u["column_name"]))
    if unresolved_star:
        body["reason"] = (
            "an upstream SELECT * could not be expanded: its columns are unknown (no catalog entry)"
        )
        return body
    body["resolved"] = True
    if not body["upstream"]:
        body["reason"] = "the column is computed from constants or functions without upstream columns"
    return body
