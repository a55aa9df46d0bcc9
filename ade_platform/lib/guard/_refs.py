"""Every object a statement touches, read off the sqlglot AST.

Walks the whole tree, so tables inside CTE bodies, subqueries, joins, set-operation arms, LATERAL and
table-function arguments are all seen. CTE names are resolved with Snowflake's scoping (a CTE sees only
the CTEs defined before it); a name that is not certainly a CTE counts as a real object, because missing
an object means skipping an exclusion check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from ade_platform.lib.guard._catalog import (
    ACCOUNT_USAGE_VIEWS,
    BUILTIN_FUNCTIONS,
    CONTEXT_FUNCTIONS,
    DATA_TABLE_FUNCTIONS,
    INFORMATION_SCHEMA_TABLE_FUNCTIONS,
    INFORMATION_SCHEMA_VIEWS,
    METADATA_FUNCTIONS,
    SAFE_TABLE_FUNCTIONS,
)
from ade_platform.lib.guard.policy import GuardPolicy, normalize_kind, split_name


@dataclass
class ObjectRef:
    text: str  # as written, upper-cased: PROD.HR.SALARIES, @STAGE, <IDENTIFIER($V)>
    parts: tuple[str, ...]
    kind: str  # normalized kind; for a FROM reference "TABLE" stands for any relation kind
    relation: bool = False
    resolved: bool = True
    metadata: bool = False


@dataclass
class Scan:
    refs: list[ObjectRef] = field(default_factory=list)
    write: list[str] = field(default_factory=list)  # reasons that make the statement WRITE
    sources: list[str] = field(default_factory=list)  # reads something other than metadata
    blockers: list[str] = field(default_factory=list)  # not provably metadata-only
    names_unsafe: list[str] = field(default_factory=list)  # result column names may carry values
    metadata_sources: int = 0
    has_columns: bool = False
    opaque_source: bool = False  # reads a result whose origin cannot be checked (RESULT_SCAN)

    def add(self, bucket: list[str], reason: str) -> None:
        if reason not in bucket:
            bucket.append(reason)


def _ident_text(ident: exp.Expression | str | None) -> str | None:
    if ident is None:
        return None
    # sqlglot stores the empty schema of `db..t` as a plain empty string.
    return ident if isinstance(ident, str) else ident.name


def _exact(ident: exp.Expression | None, word: str) -> bool:
    """Unquoted names fold to upper case; a quoted one must already be upper case to mean the same object."""
    if not isinstance(ident, exp.Identifier):
        return False
    return ident.name == word if ident.quoted else ident.name.upper() == word


def _loose(ident: exp.Expression | None, word: str) -> bool:
    return isinstance(ident, exp.Identifier) and ident.name.upper() == word


def display(parts: tuple[str, ...] | list[str]) -> str:
    return ".".join(p if re.fullmatch(r"[A-Z0-9_$]+", p) else '"' + p.replace('"', '""') + '"' for p in parts)


def _snowflake_norm(ident: exp.Identifier) -> str:
    return ident.name if ident.quoted else ident.name.upper()


def _is_cte_reference(table: exp.Table) -> bool:
    """True only when an enclosing WITH defines this (unqualified) name before the point of use."""
    if table.args.get("db") is not None or table.args.get("catalog") is not None:
        return False
    if not isinstance(table.this, exp.Identifier):
        return False
    name = _snowflake_norm(table.this)
    child: exp.Expression = table
    anc = table.parent
    cte_index: int | None = None
    while anc is not None:
        if isinstance(anc, exp.With):
            cte_index = next((i for i, c in enumerate(anc.expressions) if c is child), None)
        else:
            with_ = anc.args.get("with_")
            if isinstance(with_, exp.With):
                ctes = with_.expressions
                # Inside CTE i only CTEs 0..i-1 are certainly in scope; a self-reference may be the real table.
                visible = ctes[:cte_index] if child is with_ and cte_index is not None else ctes
                for cte in visible:
                    alias = cte.args.get("alias")
                    ident = alias.this if isinstance(alias, exp.TableAlias) else None
                    if isinstance(ident, exp.Identifier) and _snowflake_norm(ident) == name:
                        return True
            cte_index = None
        child, anc = anc, anc.parent
    return False


def _context_kind(table: exp.Table) -> tuple[str, bool]:
    """(kind, is_relation): the statement around a Table node says what kind of object it names."""
    parent = table.parent
    if isinstance(parent, exp.Schema):
        parent = parent.parent
    if isinstance(parent, exp.Clone):
        parent = parent.parent
    if isinstance(parent, exp.Show):
        kind = parent.args.get("scope_kind")
        return (normalize_kind(str(kind)) if kind else "TABLE"), False
    if isinstance(parent, (exp.Describe, exp.Create, exp.Drop, exp.Undrop, exp.Alter, exp.Use, exp.Comment)):
        kind = parent.args.get("kind")
        if isinstance(kind, exp.Expression):
            kind = kind.name
        if kind:
            return normalize_kind(str(kind)), False
    return "TABLE", True


def func_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.upper()
    # Typed nodes: regenerate in Snowflake spelling (GroupConcat -> LISTAGG, Explode -> FLATTEN).
    return node.sql(dialect="snowflake").split("(", 1)[0].strip().upper()


def _dot_chain(node: exp.Expression) -> tuple[list[exp.Expression], exp.Expression | None]:
    """Flatten ``a.b.fn(...)`` (nested Dot nodes) into ([a, b], fn)."""
    if isinstance(node, exp.Dot):
        left, _ = _dot_chain(node.this)
        right = node.expression
        if isinstance(right, exp.Func):
            return left, right
        return [*left, right], None
    return [node], None


def _literal_arg(fn: exp.Expression, index: int) -> str | None:
    args = fn.expressions if isinstance(fn, exp.Anonymous) else list(fn.iter_expressions())
    if index >= len(args):
        return None
    arg = args[index]
    if isinstance(arg, exp.Kwarg):
        arg = arg.expression
    folded = constant_text(arg)
    return "" if folded is None else folded  # "": not a constant, the object is only known at run time


def constant_text(node: exp.Expression | None) -> str | None:
    """The value of a string literal or a concatenation of literals (``'DB.' || 'S.T'``), else None."""
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    if isinstance(node, exp.Paren):
        return constant_text(node.this)
    if isinstance(node, exp.DPipe):
        left, right = constant_text(node.this), constant_text(node.expression)
        return None if left is None or right is None else left + right
    if isinstance(node, exp.Concat):
        parts = [constant_text(e) for e in node.expressions]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    return None


def _constant_arguments(fn: exp.Expression) -> bool:
    args = fn.expressions if isinstance(fn, exp.Anonymous) else list(fn.iter_expressions())
    values = [a.expression if isinstance(a, exp.Kwarg) else a for a in args]
    return all(
        isinstance(v, (exp.Literal, exp.Boolean, exp.Null)) or constant_text(v) is not None for v in values
    )


class _Scanner:
    def __init__(self, policy: GuardPolicy) -> None:
        self.policy = policy
        self.scan = Scan()
        self.handled: set[int] = set()

    def ref(self, ref: ObjectRef) -> None:
        if all((r.text, r.kind) != (ref.text, ref.kind) for r in self.scan.refs):
            self.scan.refs.append(ref)

    def unresolved(self, text: str, kind: str = "TABLE") -> None:
        self.ref(ObjectRef(text=f"<{text.upper()}>", parts=(), kind=kind, resolved=False))
        self.scan.add(self.scan.blockers, f"unresolved_object:{text.upper()}")
        self.scan.add(self.scan.names_unsafe, "unresolved_object")

    def named_arg_object(self, fn: exp.Expression, spec: tuple[int, int | str] | None, fname: str) -> None:
        if spec is None:
            return
        name_idx, kind_spec = spec
        name = _literal_arg(fn, name_idx)
        kind: str | None
        if isinstance(kind_spec, int):
            kind_text = _literal_arg(fn, kind_spec)
            kind = normalize_kind(kind_text) if kind_text else None
        else:
            kind = kind_spec
        if name is None:
            return
        if not name:
            self.unresolved(f"{fname}(...)")
            return
        parts = tuple(split_name(name.split("(", 1)[0]))
        if parts:
            self.ref(ObjectRef(text=display(parts), parts=parts, kind=kind or "TABLE"))

    def table(self, table: exp.Table) -> None:
        this = table.this
        if isinstance(this, (exp.Func, exp.Dot)) and not isinstance(this, exp.DynamicIdentifier):
            self.table_function(this)
            return
        kind, relation = _context_kind(table)
        if isinstance(this, exp.DirectoryStage) and isinstance(this.this, exp.Var):
            # DIRECTORY(@stage): the stage's file listing (paths, sizes, dates), like LIST.
            self.stage(this.this.name, relation=False)
            self.scan.metadata_sources += 1
            return
        if isinstance(this, exp.Var) and this.name.startswith("@"):
            self.stage(this.name, relation)
            return
        if isinstance(this, exp.DynamicIdentifier):
            inner = this.this
            if isinstance(inner, exp.Literal) and inner.is_string:
                parts = tuple(split_name(inner.this))
                self.ref(ObjectRef(display(parts), parts, kind, relation=relation))
                if relation:
                    self.scan.add(self.scan.sources, f"reads:{display(parts)}")
            else:
                self.unresolved(f"IDENTIFIER({inner.sql(dialect='snowflake')})")
            return
        if isinstance(this, exp.Literal):
            # COPY INTO 's3://...': an external location, never a named object.
            self.ref(ObjectRef(text=f"<LOCATION {this.this}>", parts=(), kind="LOCATION"))
            return
        if relation and _is_cte_reference(table):
            return
        idents = [table.args.get("catalog"), table.args.get("db"), this]
        parts = tuple(
            ("PUBLIC" if (i == 1 and not _ident_text(x)) else (_ident_text(x) or "")).upper()
            for i, x in enumerate(idents)
            if x is not None
        )
        parts = tuple(p for p in parts if p)
        if not parts:
            return
        ref = ObjectRef(display(parts), parts, kind, relation=relation)
        if relation:
            ref.metadata = self.metadata_view(table)
            if ref.metadata:
                self.scan.metadata_sources += 1
            else:
                self.scan.add(self.scan.sources, f"reads:{ref.text}")
        self.ref(ref)

    def metadata_view(self, table: exp.Table) -> bool:
        catalog, schema, name = table.args.get("catalog"), table.args.get("db"), table.this
        text = display(
            tuple((_ident_text(x) or "").upper() for x in (catalog, schema, name) if x is not None)
        )
        view = _snowflake_norm(name) if isinstance(name, exp.Identifier) else ""
        # (schema it looks like, whether it really is that schema, the views allowed in it)
        metadata_schemas = (
            ("INFORMATION_SCHEMA", _exact(schema, "INFORMATION_SCHEMA"), INFORMATION_SCHEMA_VIEWS),
            # ACCOUNT_USAGE is only trustworthy in the shared SNOWFLAKE database; elsewhere anyone can create it.
            (
                "ACCOUNT_USAGE",
                _exact(catalog, "SNOWFLAKE") and _exact(schema, "ACCOUNT_USAGE"),
                ACCOUNT_USAGE_VIEWS,
            ),
        )
        for looks_like, genuine, allowed_views in metadata_schemas:
            if not _loose(schema, looks_like):
                continue
            if not genuine or view.upper() != view:
                self.scan.add(self.scan.blockers, f"lookalike_metadata:{text}")
            elif view in allowed_views:
                return True
            else:
                self.scan.add(self.scan.blockers, f"unlisted_metadata_view:{text}")
            return False
        return False

    def stage(self, raw: str, relation: bool) -> None:
        body = raw[1:].split("/", 1)[0]
        if body.startswith("~"):
            self.ref(ObjectRef(text="@~", parts=(), kind="STAGE"))
        elif body.startswith("%"):
            parts = tuple(split_name(body[1:]))
            self.ref(ObjectRef(f"@%{display(parts)}", parts, "TABLE"))
        else:
            parts = tuple(split_name(body))
            self.ref(ObjectRef(f"@{display(parts)}", parts, "STAGE"))
        if relation:
            self.scan.add(self.scan.sources, f"stage_read:@{body.upper()}")

    def table_function(self, node: exp.Expression) -> None:
        self.handled.add(id(node))
        if isinstance(node, exp.Dot):
            prefix, fn = _dot_chain(node)
            if fn is None:
                self.unresolved(node.sql(dialect="snowflake"))
                return
            self.handled.add(id(fn))
            name = func_name(fn)
            schema = prefix[-1] if prefix else None
            qual = (*((_ident_text(p) or "").upper() for p in prefix), name)
            if _exact(schema, "INFORMATION_SCHEMA"):
                if name in INFORMATION_SCHEMA_TABLE_FUNCTIONS:
                    self.scan.metadata_sources += 1
                    self.ref(ObjectRef(display(qual), qual, "FUNCTION", metadata=True))
                    self.named_arg_object(fn, INFORMATION_SCHEMA_TABLE_FUNCTIONS[name], name)
                else:
                    # Read-only system functions, but e.g. QUERY_HISTORY returns other statements' literals.
                    self.scan.add(self.scan.sources, f"system_table_function:INFORMATION_SCHEMA.{name}")
                return
            self.user_table_function(qual)
            return
        name = func_name(node)
        if name == "RESULT_SCAN":
            self.scan.add(self.scan.sources, "result_scan")
            self.scan.add(self.scan.names_unsafe, "result_scan")
            self.scan.opaque_source = True
        elif name == "INFER_SCHEMA":
            # Column names and types of staged files; the stage and file format are checked like objects.
            self.scan.metadata_sources += 1
            self.infer_schema(node)
        elif name in DATA_TABLE_FUNCTIONS:
            self.scan.add(self.scan.sources, f"system_table_function:{name}")
        elif name not in SAFE_TABLE_FUNCTIONS:
            self.user_table_function((name,))
        # FLATTEN / SPLIT_TO_TABLE / GENERATOR only reshape their arguments: nothing to record.

    def infer_schema(self, fn: exp.Expression) -> None:
        for arg in fn.expressions if isinstance(fn, exp.Anonymous) else []:
            key = arg.this.name.upper() if isinstance(arg, exp.Kwarg) else ""
            value = constant_text(arg.expression) if isinstance(arg, exp.Kwarg) else None
            if key == "LOCATION":
                if value and value.startswith("@"):
                    self.stage(value, relation=False)
                else:
                    self.unresolved("INFER_SCHEMA(LOCATION)", "STAGE")
            elif key == "FILE_FORMAT":
                if value:
                    parts = tuple(split_name(value))
                    self.ref(ObjectRef(display(parts), parts, "FILE_FORMAT"))
                else:
                    self.unresolved("INFER_SCHEMA(FILE_FORMAT)", "FILE_FORMAT")

    def user_table_function(self, qual: tuple[str, ...]) -> None:
        text = display(qual)
        self.ref(ObjectRef(text, qual, "FUNCTION"))
        if text in self.policy.allowed_table_functions or qual[-1] in self.policy.allowed_table_functions:
            self.scan.add(self.scan.sources, f"udtf:{text}")
        else:
            # Snowflake accepts stored procedures in FROM TABLE(...): the call may change state.
            self.scan.add(self.scan.write, f"unknown_table_function:{text}")

    def scalar_function(self, fn: exp.Anonymous) -> None:
        name = fn.name.upper()
        if name in METADATA_FUNCTIONS:
            self.named_arg_object(fn, METADATA_FUNCTIONS[name], name)
            if name.startswith("SYSTEM$") and not _constant_arguments(fn):
                # Read-only SYSTEM$ functions are trusted with literal arguments only.
                self.scan.add(self.scan.blockers, f"non_constant_argument:{name}")
        elif name.startswith("SYSTEM$"):
            # SYSTEM$ functions include CANCEL_QUERY, ABORT_SESSION, WAIT, TASK_DEPENDENTS_ENABLE...
            self.scan.add(self.scan.write, f"side_effect_function:{name}")
        elif name not in CONTEXT_FUNCTIONS and name not in BUILTIN_FUNCTIONS:
            self.ref(ObjectRef(name, (name,), "FUNCTION"))
            self.scan.add(self.scan.blockers, f"udf:{name}")

    def qualified_function(self, node: exp.Dot) -> None:
        prefix, fn = _dot_chain(node)
        if fn is None:
            return
        self.handled.add(id(fn))
        qual = (*((_ident_text(p) or "").upper() for p in prefix), func_name(fn))
        self.ref(ObjectRef(display(qual), qual, "FUNCTION"))
        self.scan.add(self.scan.blockers, f"udf:{display(qual)}")

    def walk(self, tree: exp.Expression) -> Scan:
        for node in tree.walk():
            if id(node) in self.handled:
                continue
            if isinstance(node, exp.Table):
                self.table(node)
            elif isinstance(node, (exp.TableFromRows, exp.Lateral)) and isinstance(
                node.this, (exp.Func, exp.Dot)
            ):
                self.table_function(node.this)
            elif isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
                self.qualified_function(node)
            elif isinstance(node, exp.Anonymous):
                self.scalar_function(node)
            elif isinstance(node, exp.Parameter) and not isinstance(node.this, exp.Literal):
                self.scan.add(self.scan.blockers, "session_variable")
            elif isinstance(node, exp.Placeholder):
                self.scan.add(self.scan.blockers, "bind_parameter")
            elif isinstance(node, exp.Column):
                self.scan.has_columns = True
                if node.table and node.name.upper() == "NEXTVAL":
                    # seq.NEXTVAL advances the sequence: a side effect, even inside a SELECT.
                    self.scan.add(self.scan.write, "side_effect_function:NEXTVAL")
            elif isinstance(node, exp.Into):
                self.scan.add(self.scan.write, "select_into")
            elif isinstance(node, exp.Pivot) and _dynamic_pivot(node):
                self.scan.add(self.scan.names_unsafe, "dynamic_pivot")
        return self.scan


def _dynamic_pivot(pivot: exp.Pivot) -> bool:
    """PIVOT ... IN (ANY) or IN (SELECT ...) names result columns after data values."""
    if pivot.args.get("unpivot"):
        return False
    for field_ in pivot.args.get("fields") or []:
        for value in field_.expressions if isinstance(field_, exp.In) else [field_]:
            if isinstance(value, (exp.PivotAny, exp.Select, exp.Subquery, exp.Query)):
                return True
        if isinstance(field_, exp.In) and field_.args.get("query") is not None:
            return True
    return False


def scan_tree(tree: exp.Expression, policy: GuardPolicy) -> Scan:
    return _Scanner(policy).walk(tree)
