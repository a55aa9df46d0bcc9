"""When a query can only return counts: the SCALAR proof, on the sqlglot AST.

The outermost SELECT is one row (no GROUP BY; an aggregate or no FROM) whose every projection is a *count
expression*: literals, safe aggregates and SCALAR scalar subqueries combined by any built-in operator or
function (``ROUND(100.0 * COUNT(x) / NULLIF(COUNT(*), 0), 2)`` is still a function of counts). Behind it,
rows may come from tables (with SAMPLE / time travel), joins, CTEs, derived tables, set operations and
``LATERAL FLATTEN`` over a column, provided that nothing inside can turn a cell into something that leaves:

- inner projections are bare columns, ``*`` or safe aggregates over bare columns: a computed column
  (``SIGN(salary - 100000) AS s``) would become a chosen predicate once counted;
- every predicate (WHERE, ON, HAVING, CASE / IFF conditions, COUNT_IF) is a null test of a bare column,
  a comparison of two bare columns, a comparison of two count expressions (``HAVING COUNT(*) > 1``,
  ``1 = 1``), EXISTS, or ``col IN (SELECT col ...)``. A column compared with a literal, a pattern, a range
  or a computed value is the membership oracle and stays DATA;
- two bare columns are only comparable while no column can hold an attacker-chosen constant: literals
  cannot reach a column (inner projections are bare), VALUES and table functions other than FLATTEN over
  a column are refused as row sources, and a count-valued column of a derived table (``COUNT(*) AS n``
  over ``SAMPLE (91827 ROWS)`` is a chosen number) disables column comparisons altogether;
- inner ORDER BY + LIMIT, LIMIT/TOP outside EXISTS, windows, QUALIFY, PIVOT, MATCH_RECOGNIZE, CONNECT BY
  and recursive CTEs are refused.

``allow_filtered_counts`` (operator's choice) lifts the predicate rule only.
"""

from __future__ import annotations

from sqlglot import exp

from ade_platform.lib.guard._refs import func_name
from ade_platform.lib.guard.policy import GuardPolicy

COUNT_TYPES = (exp.Count, exp.CountIf, exp.ApproxDistinct, exp.Hll)
NUMERIC_TYPES = (exp.Avg, exp.Sum)
# STDDEV/VARIANCE/SKEW/KURTOSIS of numbers: over one or two rows they give the values away like AVG.
STATISTIC_TYPES = (
    exp.Stddev,
    exp.StddevPop,
    exp.StddevSamp,
    exp.Variance,
    exp.VariancePop,
    exp.Skewness,
    exp.Kurtosis,
)
# Functions of one column that only bucket its values (no literal can steer them): counting their
# distinct results (distinct months, distinct lower-cased e-mails) is a statistic, not a chosen predicate.
_BUCKETS = (
    exp.TimestampTrunc,
    exp.DateTrunc,
    exp.Year,
    exp.Quarter,
    exp.Month,
    exp.Week,
    exp.Day,
    exp.DayOfWeek,
    exp.DayOfYear,
    exp.Hour,
    exp.TsOrDsToDate,
    exp.Lower,
    exp.Upper,
    exp.Trim,
    exp.Length,
)
_BUCKET_TYPES = frozenset({exp.DataType.Type.DATE})
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
_CONSTANTS = (exp.Literal, exp.Null, exp.Boolean)
_SELECT_CODES = {
    "group": "group_by",
    "qualify": "qualify",
    "windows": "window_function",
    "pivots": "pivot",
    "match": "match_recognize",
    "connect": "connect_by",
    "into": "select_into",
    "prewhere": "filter_predicate",
    "limit": "limit_in_subquery",
    "offset": "limit_in_subquery",
    "order": "order_in_subquery",
}
_OUTER_KEYS = frozenset(
    {"expressions", "from_", "joins", "where", "having", "order", "limit", "offset", "distinct", "with_"}
    | {"hint", "kind", "laterals", "sample"}
)
_INNER_KEYS = frozenset(
    {"expressions", "from_", "joins", "where", "having", "distinct", "with_", "group", "hint", "kind"}
    | {"laterals", "order", "sample"}
)
_TABLE_KEYS = frozenset({"this", "db", "catalog", "alias", "when", "sample"})
_JOIN_KEYS = frozenset({"this", "kind", "side", "method", "on", "using", "match_condition", "global_"})
_FLATTEN_OPTIONS = frozenset({"OUTER", "RECURSIVE", "MODE"})


def _present(value: object) -> bool:
    return value not in (None, False, [], "")


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _bare_column(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier)


def _owner(node: exp.Expression) -> exp.Expression | None:
    """The SELECT whose clause holds ``node`` (a subquery's SELECT for its own columns)."""
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select):
        parent = parent.parent
    return parent


class _Proof:
    def __init__(self, policy: GuardPolicy) -> None:
        self.policy = policy
        self.issues: list[str] = []
        self.column_comparisons = 0
        self.count_columns = False
        self.computed_aliases: set[str] = set()
        self.visited: set[int] = set()  # SELECTs this proof has examined

    def add(self, code: str) -> None:
        self.issues.append(code)

    # -- expressions --------------------------------------------------------------------------------
    def column_operand(self, node: exp.Expression) -> bool:
        """A bare column that is certainly a column: not the alias of a computed projection (Snowflake
        lets WHERE refer to ``SELECT 100000 AS v``, which would smuggle a literal into a comparison)."""
        if not _bare_column(node):
            return False
        return bool(node.table) or node.name.upper() not in self.computed_aliases

    def count_expression(self, node: exp.Expression) -> bool:
        """Literals, safe aggregates and SCALAR scalar subqueries, combined by anything built in."""
        if isinstance(node, (*_CONSTANTS, exp.DataType, exp.Var)):
            return True
        if isinstance(node, exp.Alias):
            return self.count_expression(node.this)
        if isinstance(node, exp.AggFunc):
            return self.aggregate(node)
        if isinstance(node, exp.Subquery):
            inner = node.this
            if isinstance(inner, exp.Select) and len(inner.expressions) == 1:
                before = len(self.issues)
                self.outer(inner)
                return len(self.issues) == before
            self.add("subquery_projection")
            return False
        if isinstance(node, exp.Window):
            self.add("window_function")
            return False
        if isinstance(node, (exp.Column, exp.Star, exp.Query, exp.Dot, exp.Parameter, exp.Placeholder)):
            self.add("non_aggregate_projection")
            return False
        return all(self.count_expression(child) for child in node.iter_expressions())

    def count_like(self, node: exp.Expression) -> bool:
        """An aggregate argument whose only dependence on cells is through allowed predicates:
        ``CASE WHEN email IS NULL THEN 1 ELSE 0 END``, ``IFF(a = b, 1, 0)``: summing it is counting."""
        if isinstance(node, _CONSTANTS):
            return True
        if isinstance(node, (exp.Paren, exp.Neg, exp.Cast, exp.TryCast, exp.Add, exp.Sub, exp.Mul)):
            return all(self.count_like(c) for c in node.iter_expressions() if not isinstance(c, exp.DataType))
        if isinstance(node, exp.If):
            parts = [node.args.get("true"), node.args.get("false")]
            return self.predicate(node.this) and all(p is None or self.count_like(p) for p in parts)
        if isinstance(node, exp.Case):
            if node.this is not None:  # CASE x WHEN 'a' ... compares x with literals
                return False
            ifs = node.args.get("ifs") or []
            default = node.args.get("default")
            return all(self.count_like(i) for i in ifs) and (default is None or self.count_like(default))
        return False

    def aggregate_argument(self, node: exp.Expression, *, counting: bool) -> bool:
        table_star = isinstance(node, exp.Column) and isinstance(node.this, exp.Star)  # COUNT(t.*)
        return (
            isinstance(node, (exp.Star, *_CONSTANTS))
            or table_star
            or _bare_column(node)
            or (counting and _bucketed_column(node))
            or self.count_like(node)
        )

    def aggregate(self, agg: exp.AggFunc) -> bool:
        name = func_name(agg)
        if isinstance(agg, exp.CountIf):
            return self.predicate(agg.this)
        numeric = isinstance(agg, NUMERIC_TYPES + STATISTIC_TYPES)
        if not isinstance(agg, COUNT_TYPES) and not numeric:
            self.add(f"value_aggregate:{name}")
            return False
        args: list[exp.Expression] = []
        for arg in [agg.this, *agg.expressions]:
            if isinstance(arg, exp.Distinct):
                args.extend(arg.expressions)
            elif arg is not None:
                args.append(arg)
        if numeric and not self.policy.allow_numeric_aggregates:
            # Summing a 0/1 null flag is counting; summing a column is not (over one row it is the value).
            if args and all(self.count_like(a) for a in args):
                return True
            self.add(f"numeric_aggregate:{name}")
            return False
        if all(self.aggregate_argument(a, counting=not numeric) for a in args):
            return True
        self.add(f"aggregate_argument_expression:{name}")
        return False

    def predicate(self, node: exp.Expression | None) -> bool:
        if node is None:
            return True
        if self.policy.allow_filtered_counts:
            self.scan_subqueries(node)
            return True
        if isinstance(node, (exp.And, exp.Or, exp.Xor)):
            return all([self.predicate(node.this), self.predicate(node.expression)])
        if isinstance(node, (exp.Not, exp.Paren)):
            return self.predicate(node.this)
        if isinstance(node, exp.Boolean):
            return True
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            if self.column_operand(node.this) or self.quiet_count_expression(node.this):
                return True
        elif isinstance(node, exp.Exists):
            self.inner(node.this, in_exists=True)
            return True
        elif isinstance(node, exp.In) and node.args.get("query") is not None:
            if self.column_operand(node.this):
                self.comparison_of_columns()
                self.inner(node.args["query"], single_column=True)
                return True
        elif isinstance(node, _COMPARISONS):
            left, right = node.this, node.expression
            quantified = isinstance(right, (exp.Any, exp.All)) and isinstance(right.this, exp.Query)
            if quantified and self.column_operand(left):
                # col = ANY (SELECT col ...), col <> ALL (...) (NOT IN): column against column values.
                self.comparison_of_columns()
                self.inner(right.this, single_column=True)
                return True
            if self.column_operand(left) and self.column_operand(right):
                self.comparison_of_columns()
                return True
            if self.quiet_count_expression(left) and self.quiet_count_expression(right):
                return True
        self.add(f"filter_predicate:{node.key.upper()}")
        return False

    def quiet_count_expression(self, node: exp.Expression) -> bool:
        """count_expression without recording why not (the caller reports the predicate instead)."""
        saved = list(self.issues)
        ok = self.count_expression(node)
        if not ok:
            self.issues = saved
        return ok

    def comparison_of_columns(self) -> None:
        self.column_comparisons += 1

    def scan_subqueries(self, node: exp.Expression) -> None:
        """Under allow_filtered_counts predicates are free, but a subquery in them is still a row source."""
        for sub in node.find_all(exp.Subquery):
            if _owner(sub) is _owner(node):
                self.inner(sub.this, in_exists=True)

    # -- row sources --------------------------------------------------------------------------------
    def clauses(self, select: exp.Select, allowed: frozenset[str]) -> None:
        for key, value in select.args.items():
            if key not in allowed and _present(value):
                self.add(_SELECT_CODES.get(key, f"clause:{key}"))

    def with_clause(self, select: exp.Select) -> None:
        with_ = select.args.get("with_")
        if with_ is None:
            return
        if with_.args.get("recursive"):
            self.add("recursive_cte")
        for cte in with_.expressions:
            self.inner(cte.this)

    def sources(self, select: exp.Select) -> None:
        from_ = select.args.get("from_")
        if from_ is not None:
            self.source(from_.this)
        for join in select.args.get("joins") or []:
            for key, value in join.args.items():
                if key not in _JOIN_KEYS and _present(value):
                    self.add(f"join_modifier:{key}")
            self.source(join.this)
            self.predicate(join.args.get("on"))
            self.predicate(join.args.get("match_condition"))
            if join.args.get("using") or str(join.args.get("method") or "").upper() == "NATURAL":
                self.comparison_of_columns()
        for lateral in select.args.get("laterals") or []:
            self.source(lateral)

    def source(self, node: exp.Expression) -> None:
        if isinstance(node, exp.Table):
            this = node.this
            if isinstance(this, exp.Var):
                self.add("stage_read")
                return
            named = isinstance(this, exp.Identifier) or (
                isinstance(this, exp.DynamicIdentifier) and isinstance(this.this, exp.Literal)
            )
            if not named:
                self.add("table_function")
                return
            for key, value in node.args.items():
                if key not in _TABLE_KEYS and _present(value):
                    self.add("pivot" if key == "pivots" else f"table_modifier:{key}")
            return
        if isinstance(node, exp.Subquery):
            if node.args.get("pivots"):
                self.add("pivot")
            self.inner(node.this)
            return
        if isinstance(node, (exp.Lateral, exp.TableFromRows)) and isinstance(node.this, exp.Explode):
            self.flatten(node.this)
            return
        if isinstance(node, exp.Values):
            self.add("values_source")
            return
        self.add("table_function")

    def flatten(self, fn: exp.Explode) -> None:
        """FLATTEN over a column only: FLATTEN(PARSE_JSON('["x"]')) would be a column of chosen constants,
        and a PATH => 'key' lookup asks whether a data-valued key exists."""
        args = [fn.this, *fn.expressions]
        first = args[0].expression if isinstance(args[0], exp.Kwarg) else args[0]
        ok = _bare_column(first) and (
            not isinstance(args[0], exp.Kwarg) or args[0].this.name.upper() == "INPUT"
        )
        for option in args[1:]:
            ok = ok and (
                isinstance(option, exp.Kwarg)
                and option.this.name.upper() in _FLATTEN_OPTIONS
                and isinstance(option.expression, _CONSTANTS)
            )
        if not ok:
            self.add("flatten_argument")

    # -- queries ------------------------------------------------------------------------------------
    def inner(self, node: exp.Expression, *, in_exists: bool = False, single_column: bool = False) -> None:
        """A query whose rows stay inside the statement (CTE, derived table, EXISTS / IN subquery)."""
        if isinstance(node, exp.Subquery):
            for key in ("limit", "offset", "order"):
                if _present(node.args.get(key)) and not in_exists:
                    self.add(_SELECT_CODES[key])
            self.inner(node.this, in_exists=in_exists, single_column=single_column)
            return
        if isinstance(node, exp.SetOperation):
            for key in ("limit", "offset", "order"):
                if _present(node.args.get(key)) and not in_exists:
                    self.add(_SELECT_CODES[key])
            self.with_clause(node)  # type: ignore[arg-type]
            self.inner(node.left, in_exists=in_exists, single_column=single_column)
            self.inner(node.right, in_exists=in_exists, single_column=single_column)
            return
        if not isinstance(node, exp.Select):
            self.add("values_source" if isinstance(node, exp.Values) else f"query_shape:{node.key.upper()}")
            return
        self.visited.add(id(node))
        allowed = _INNER_KEYS | ({"limit", "offset"} if in_exists else frozenset())
        self.clauses(node, allowed)
        if node.args.get("order") is not None and node.args.get("limit") is not None:
            self.add("order_limit")
        self.rows_read(node)
        group = node.args.get("group")
        if group is not None:
            for key in group.expressions:
                if not (_bare_column(key) or (isinstance(key, exp.Literal) and not key.is_string)):
                    self.add("computed_group_key")
            for key in ("rollup", "cube", "grouping_sets"):
                if _present(group.args.get(key)):
                    self.add("computed_group_key")
        order = node.args.get("order")
        for key in order.expressions if order is not None else []:
            if not _bare_column(key.this):
                self.add("computed_order_key")
        if in_exists:
            return  # EXISTS ignores what the subquery projects
        if single_column and len(node.expressions) != 1:
            self.add("subquery_projection")
        for projection in node.expressions:
            self.inner_projection(projection, allow_aggregate=not single_column)

    def rows_read(self, select: exp.Select) -> None:
        """What a SELECT reads and how it filters: its CTEs, row sources, WHERE and HAVING."""
        self.with_clause(select)
        self.sources(select)
        for clause in ("where", "having"):
            found = select.args.get(clause)
            self.predicate(found.this if found is not None else None)

    def inner_projection(self, node: exp.Expression, *, allow_aggregate: bool) -> None:
        target = node.this if isinstance(node, exp.Alias) else node
        if _bare_column(target):
            return
        if isinstance(target, exp.Column) and isinstance(target.this, exp.Star):
            return
        if isinstance(target, exp.Star):
            if _present(target.args.get("replace")):
                self.add("computed_projection")
            return
        if allow_aggregate and isinstance(target, exp.AggFunc):
            if self.aggregate(target):  # otherwise aggregate() said why
                # A count-valued column can be made any chosen number (SAMPLE (n ROWS)): see module doc.
                self.count_columns = True
            return
        self.add("computed_projection")

    def outer(self, select: exp.Select) -> None:
        self.visited.add(id(select))
        self.clauses(select, _OUTER_KEYS)
        self.rows_read(select)
        if not select.expressions:
            self.add("no_projection")
        for projection in select.expressions:
            self.count_expression(projection)
        if select.args.get("from_") is not None and not _aggregates_here(select):
            # SELECT 1 FROM t returns one row per row: not a single row of counts.
            self.add("non_aggregate_projection")
        order = select.args.get("order")
        for key in order.expressions if order is not None else []:
            if not self.quiet_count_expression(key.this):
                self.add("computed_order_key")


def _bucketed_column(node: exp.Expression) -> bool:
    """DATE_TRUNC(month, col), YEAR(col), col::DATE, LOWER(col), LENGTH(col): one bare column, no literal."""
    if isinstance(node, exp.Cast) and not isinstance(node, exp.TryCast):
        return _bare_column(node.this) and node.to.this in _BUCKET_TYPES
    if not isinstance(node, _BUCKETS) or (isinstance(node, exp.TsOrDsToDate) and node.args.get("format")):
        return False
    children = list(node.iter_expressions())
    columns = [c for c in children if _bare_column(c)]
    others = [c for c in children if not _bare_column(c)]
    return len(columns) == 1 and all(isinstance(c, exp.Var) for c in others)


def _aggregates_here(select: exp.Select) -> bool:
    for projection in select.expressions:
        for agg in projection.find_all(exp.AggFunc):
            if _owner(agg) is select:
                return True
    return False


def count_query_issues(select: exp.Select, policy: GuardPolicy) -> list[str]:
    """Empty when ``select`` provably returns one row of counts (the SCALAR class)."""
    proof = _Proof(policy)
    for node in select.walk():
        if isinstance(node, exp.Alias) and not _bare_column(node.this) and node.alias:
            proof.computed_aliases.add(node.alias.upper())
        if isinstance(node, exp.Window):
            proof.add("window_function")
        elif isinstance(node, exp.Pivot):
            proof.add("unpivot" if node.args.get("unpivot") else "pivot")
        elif isinstance(node, (exp.MatchRecognize, exp.Connect)):
            proof.add(node.key)
    proof.outer(select)
    if any(isinstance(n, exp.Select) and id(n) not in proof.visited for n in select.walk()):
        # A query somewhere the proof does not look (AT(TIMESTAMP => (SELECT ...)), LIMIT (SELECT ...)).
        proof.add("subquery")
    if proof.column_comparisons and proof.count_columns and not policy.allow_filtered_counts:
        proof.add("count_column_comparison")
    return _dedupe(proof.issues)
