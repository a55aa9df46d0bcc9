"""Shape rules for a redacted DATA result: when it may still carry its row count and null percentages.

Those are counts too, so ``SELECT * FROM users WHERE ssn = '...'`` would otherwise answer the oracle: they
are returned only for "one plain table, bare columns, null-test WHERE, no ORDER BY + LIMIT". (Which
queries may return counts as values - the SCALAR class - is proven in ``_scalar.py``.)
"""

from __future__ import annotations

from sqlglot import exp

from ade_platform.lib.guard._refs import func_name
from ade_platform.lib.guard.policy import GuardPolicy

_CLAUSE_CODES = {
    "with_": "cte",
    "group": "group_by",
    "having": "having",
    "qualify": "qualify",
    "windows": "window_function",
    "pivots": "pivot",
    "laterals": "lateral",
    "joins": "join",
    "match": "match_recognize",
    "connect": "connect_by",
    "sample": "sample",
    "into": "select_into",
    "prewhere": "filter_predicate",
}
_ROW_SOURCE_CLAUSES = frozenset(
    {"expressions", "from_", "where", "limit", "offset", "distinct", "order", "hint", "kind"}
)
_PLAIN_TABLE_ARGS = frozenset({"this", "db", "catalog", "alias", "when"})


def _present(value: object) -> bool:
    return value not in (None, False, [], "")


def is_bare(node: exp.Expression) -> bool:
    """A column, ``*`` or a constant: nothing that can turn a value into a different count."""
    if isinstance(node, exp.Column):
        return isinstance(node.this, (exp.Identifier, exp.Star))
    return isinstance(node, (exp.Star, exp.Literal, exp.Null))


def null_tests_only(node: exp.Expression) -> bool:
    """Predicates that only ask whether bare columns are NULL (null share is disclosed for DATA anyway)."""
    if isinstance(node, (exp.And, exp.Or)):
        return null_tests_only(node.this) and null_tests_only(node.expression)
    if isinstance(node, (exp.Not, exp.Paren)):
        return null_tests_only(node.this)
    if isinstance(node, exp.Is):
        return (
            isinstance(node.expression, exp.Null) and isinstance(node.this, exp.Column) and is_bare(node.this)
        )
    return False


def predicate_issues(node: exp.Expression | None, policy: GuardPolicy) -> list[str]:
    if node is None or policy.allow_filtered_counts or null_tests_only(node):
        return []
    return [f"filter_predicate:{node.key.upper()}"]


def _plain_table(source: exp.Expression) -> str | None:
    if not isinstance(source, exp.Table):
        if isinstance(source, (exp.Subquery, exp.Values)):
            return "derived_table"
        return "table_function"
    this = source.this
    if isinstance(this, exp.Var):
        return "stage_read"
    dynamic_literal = isinstance(this, exp.DynamicIdentifier) and isinstance(this.this, exp.Literal)
    if not (isinstance(this, exp.Identifier) or dynamic_literal):
        return "table_function"
    for key, value in source.args.items():
        if key not in _PLAIN_TABLE_ARGS and _present(value):
            return _CLAUSE_CODES.get(key, f"table_modifier:{key}")
    return None


def row_source_issues(select: exp.Select, policy: GuardPolicy) -> list[str]:
    """Why the rows behind this SELECT are not 'one plain table, filtered only as the policy allows'."""
    issues: list[str] = []
    allowed = _ROW_SOURCE_CLAUSES | ({"joins"} if policy.allow_filtered_counts else frozenset())
    for key, value in select.args.items():
        if key not in allowed and _present(value):
            issues.append(_CLAUSE_CODES.get(key, f"clause:{key}"))
    from_ = select.args.get("from_")
    if from_ is not None:
        problem = _plain_table(from_.this)
        if problem:
            issues.append(problem)
    for join in select.args.get("joins") or []:
        problem = _plain_table(join.this)
        if problem:
            issues.append(problem)
    where = select.args.get("where")
    issues.extend(predicate_issues(where.this if where is not None else None, policy))
    filter_zone = [where, *(select.args.get("joins") or [])]
    for node in select.walk():
        if node is select:
            continue
        if isinstance(node, exp.Window):
            issues.append("window_function")
        elif isinstance(node, (exp.Select, exp.SetOperation)):
            inside_filter = any(z is not None and _within(node, z) for z in filter_zone)
            if not (policy.allow_filtered_counts and inside_filter):
                issues.append("subquery")
    return _dedupe(issues)


def _within(node: exp.Expression, ancestor: exp.Expression) -> bool:
    cur: exp.Expression | None = node
    while cur is not None:
        if cur is ancestor:
            return True
        cur = cur.parent
    return False


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def value_aggregates(node: exp.Expression, policy: GuardPolicy) -> list[str]:
    """Aggregates anywhere under ``node`` that can return a row value (MIN/MAX/ANY_VALUE/LISTAGG/...)."""
    found = []
    for agg in node.find_all(exp.AggFunc):
        if isinstance(agg, (exp.Count, exp.CountIf, exp.ApproxDistinct, exp.Hll)):
            continue
        if isinstance(agg, (exp.Avg, exp.Sum)):
            if not policy.allow_numeric_aggregates:
                found.append(f"numeric_aggregate:{func_name(agg)}")
            continue
        found.append(f"value_aggregate:{func_name(agg)}")
    return found


def stats_issues(select: exp.Select, policy: GuardPolicy) -> list[str]:
    """Empty when a redacted DATA result may still report row count and null percentages."""
    issues = row_source_issues(select, policy)
    if select.args.get("from_") is None:
        issues.append("no_table")
    for projection in select.expressions:
        node = projection.this if isinstance(projection, exp.Alias) else projection
        if isinstance(node, exp.Star):
            # `* REPLACE (expr AS col)` computes a column; EXCLUDE/RENAME do not.
            if _present(node.args.get("replace")):
                issues.append("computed_projection")
        elif not (isinstance(node, exp.Column) and is_bare(node)):
            issues.append("computed_projection")
    if select.args.get("order") is not None and select.args.get("limit") is not None:
        # ORDER BY <expr> LIMIT n picks rows by a predicate; their null pattern would answer it.
        issues.append("order_limit")
    return _dedupe(issues)


def tree_features(tree: exp.Expression, policy: GuardPolicy) -> list[str]:
    """Readable reasons for a query that is not a single SELECT (set operations and the like)."""
    found: list[str] = []
    for node in tree.walk():
        if isinstance(node, exp.SetOperation):
            found.append(f"set_operation:{node.key.upper()}")
        elif isinstance(node, exp.Window):
            found.append("window_function")
        elif isinstance(node, exp.Group):
            found.append("group_by")
        elif isinstance(node, exp.Pivot):
            found.append("unpivot" if node.args.get("unpivot") else "pivot")
    found.extend(value_aggregates(tree, policy))
    return _dedupe(found)
