"""One parsed statement's verdict: what it writes, which objects it names, and whether it is METADATA, SCALAR or
DATA (the SCALAR proof itself is `_scalar.py`).

An EXPLAIN's body is a statement of its own, classified as a whole text: the caller passes its text classifier
in (`classify_text`), which keeps the recursion in `classify.py` and this module free of it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from ade_platform.lib.guard import _tokens as tk
from ade_platform.lib.guard._catalog import (
    BUILTIN_FUNCTIONS,
    CONTEXT_FUNCTIONS,
    DATA_TABLE_FUNCTIONS,
    METADATA_FUNCTIONS,
    METADATA_TABLE_FUNCTIONS,
    OPAQUE_VERBS,
    READ_VERBS,
    SAFE_TABLE_FUNCTIONS,
)
from ade_platform.lib.guard._refs import ObjectRef, Scan, display, scan_tree
from ade_platform.lib.guard._rules import stats_issues, tree_features
from ade_platform.lib.guard._scalar import count_query_issues
from ade_platform.lib.guard._verdict import UNANALYSABLE, Verdict, dedupe
from ade_platform.lib.guard.policy import GuardPolicy, normalize_kind

# Classifies a whole SQL text (EXPLAIN's body): `classify._classify`.
TextClassifier = Callable[[str, GuardPolicy], Verdict]
# Statement nodes that change state (DML/DDL cover INSERT/UPDATE/DELETE/MERGE/CREATE/DROP and friends).
_WRITE_TYPES = (
    exp.DML,
    exp.DDL,
    exp.Alter,
    exp.Set,
    exp.Use,
    exp.Grant,
    exp.Revoke,
    exp.Copy,
    exp.Put,
    exp.Commit,
    exp.Rollback,
    exp.Transaction,
    exp.Undrop,
    exp.Comment,
    exp.TruncateTable,
    exp.Merge,
    exp.Drop,
)
_QUERY_TYPES = (exp.Select, exp.SetOperation, exp.Subquery, exp.Values)
# Written call names a METADATA query may contain (data-reading table functions are flagged as sources).
_METADATA_CALLS = (
    BUILTIN_FUNCTIONS
    | CONTEXT_FUNCTIONS
    | frozenset(METADATA_FUNCTIONS)
    | SAFE_TABLE_FUNCTIONS
    | DATA_TABLE_FUNCTIONS
    | METADATA_TABLE_FUNCTIONS
)
# Written call names a SCALAR query may contain: the proof (_scalar.py) decides where each may appear.
_SCALAR_CALLS = BUILTIN_FUNCTIONS | CONTEXT_FUNCTIONS | SAFE_TABLE_FUNCTIONS


def metadata_from_tokens(toks: list[Token]) -> Verdict | None:
    """SHOW/DESCRIBE forms sqlglot cannot parse (DESCRIBE USER u): metadata if nothing else is in the text."""
    verb = tk.first_word(toks)
    if verb not in {"SHOW", "DESC", "DESCRIBE"} or len(toks) < 2:
        return None
    if _has_query(toks):
        return None
    verdict = _metadata_command(exp.Command(this=verb), verb, toks, _token_refs(toks))
    verdict.reasons.append("parsed_from_tokens")
    return verdict


def _has_query(toks: list[Token]) -> bool:
    """A query or a pipe inside a SHOW/DESCRIBE; `SHOW ... STARTS WITH 'x'` is a name filter, not a CTE."""
    for i, t in enumerate(toks):
        if t.token_type in (TokenType.SELECT, TokenType.DARROW):
            return True
        if t.token_type == TokenType.WITH and not (i and toks[i - 1].text.upper() == "STARTS"):
            return True
    return False


def _token_refs(toks: list[Token]) -> list[ObjectRef]:
    """Objects of statements sqlglot keeps as opaque commands (SHOW GRANTS ON x, CALL p(), GRANT ...)."""
    refs = []
    expanded = tk.expand_commands(toks)
    for parts, kind in tk.dotted_names(expanded, all_names=False):
        refs.append(ObjectRef(display(parts), tuple(parts), normalize_kind(kind) if kind else "TABLE"))
    if tk.first_word(toks) == "CALL":
        names = tk.dotted_names(expanded[1:], all_names=True)[:1]
        if names:
            refs.append(ObjectRef(display(names[0][0]), tuple(names[0][0]), "PROCEDURE"))
    return refs


def _write_reasons(
    tree: exp.Expression, verb: str, toks: list[Token], scan: Scan, policy: GuardPolicy
) -> list[str]:
    reasons: list[str] = []
    command_read = isinstance(tree, exp.Command) and verb in {
        "SHOW",
        "DESC",
        "DESCRIBE",
        "EXPLAIN",
        "LIST",
        "LS",
    }
    if isinstance(tree, _WRITE_TYPES) and verb in READ_VERBS:
        # e.g. WITH ... INSERT: name the statement, not its first word.
        reasons.append(f"write_statement:{type(tree).__name__.upper()}")
    elif verb not in READ_VERBS or (isinstance(tree, (*_WRITE_TYPES, exp.Command)) and not command_read):
        reasons.append(f"write_statement:{verb or type(tree).__name__.upper()}")
    if reasons:
        if isinstance(tree, (exp.Use, exp.Set)) or verb in {"USE", "SET", "UNSET"}:
            reasons.append(f"session_state:{verb}")
        if isinstance(tree, exp.Alter) and str(tree.args.get("kind") or "").upper() == "SESSION":
            reasons.append("session_state:ALTER_SESSION")
        if verb in OPAQUE_VERBS:
            reasons.append(f"opaque_code:{verb}")
        target = tree.this if isinstance(tree, exp.Copy) else None
        if isinstance(target, exp.Table) and isinstance(target.this, (exp.Var, exp.Literal)):
            reasons.append("data_egress:COPY_INTO_LOCATION")
        if verb == "GET":
            reasons.append("data_egress:GET")
        if tree.find(exp.Select) is not None:
            reasons.append("write_embeds_query")
    reasons.extend(scan.write)
    for name, _quoted in tk.call_names(toks):
        if name.upper().startswith("SYSTEM$") and name.upper() not in METADATA_FUNCTIONS:
            reasons.append(f"side_effect_function:{name.upper()}")
    for name in tk.table_call_names(toks):
        known = SAFE_TABLE_FUNCTIONS | DATA_TABLE_FUNCTIONS | {"IDENTIFIER"}
        if name.upper() not in known and name.upper() not in policy.allowed_table_functions:
            reasons.append(f"unknown_table_function:{name.upper()}")
    return dedupe(reasons)


def analyse(
    tree: exp.Expression, toks: list[Token], policy: GuardPolicy, classify_text: TextClassifier
) -> Verdict:
    verb = tk.first_word(toks)
    scan = scan_tree(tree, policy)
    refs = list(scan.refs)
    if isinstance(tree, exp.Command):
        refs.extend(r for r in _token_refs(toks) if all(r.text != x.text for x in refs))
    if isinstance(tree, (exp.Command, exp.Put, exp.Copy, exp.ListStage)):
        # Stages in PUT/GET/REMOVE/COPY are not Table nodes (or not parsed at all): read them off the text.
        for stage in tk.stage_names(tree.sql(dialect="snowflake")):
            table_stage = stage.startswith("@%")
            parts = tuple(p.upper() for p in stage[1:].split("/", 1)[0].lstrip("%~").split(".") if p)
            text = ("@%" if table_stage else "@") + display(parts)
            if parts and all(r.text != text for r in refs):
                refs.append(ObjectRef(text, parts, "TABLE" if table_stage else "STAGE"))
    if isinstance(tree, _QUERY_TYPES) and verb not in {"SELECT", "WITH", "(", "VALUES"}:
        # The parser accepted something as a query that does not start like one (e.g. UNSET x).
        return Verdict("WRITE", [f"write_statement:{verb}"], refs, False, False, verb)
    write = _write_reasons(tree, verb, toks, scan, policy)
    if write:
        return Verdict("WRITE", write, refs, False, False, verb, scan.opaque_source)
    if isinstance(tree, exp.Show) or (isinstance(tree, exp.Command) and verb in {"SHOW", "DESC", "DESCRIBE"}):
        return _metadata_command(tree, verb, toks, refs)
    if isinstance(tree, exp.Describe):
        if isinstance(tree.this, exp.Query):
            return Verdict("DATA", ["describe_query", *scan.sources], refs, False, True, verb)
        return Verdict("METADATA", ["metadata_statement:DESCRIBE"], refs, verb=verb)
    if isinstance(tree, exp.ListStage) or verb in {"LIST", "LS"}:
        # File names, sizes and dates of a stage: metadata (stage exclusions apply; see README for paths).
        return Verdict("METADATA", ["metadata_statement:LIST"], refs, verb=verb)
    if isinstance(tree, exp.Command) and verb == "EXPLAIN":
        return _explain(tree, policy, refs, classify_text)
    if isinstance(tree, _QUERY_TYPES):
        return _query(tree, toks, scan, refs, policy, verb)
    return Verdict("DATA", [f"unknown_statement:{type(tree).__name__.upper()}"], refs, False, False, verb)


def _metadata_command(tree: exp.Expression, verb: str, toks: list[Token], refs: list[ObjectRef]) -> Verdict:
    if _has_query(toks):
        return Verdict("DATA", ["metadata_command_with_query"], refs, False, False, verb)
    listing = None
    if verb == "SHOW":
        words = str(tree.this).split() if isinstance(tree, exp.Show) else [t.text for t in toks[1:]]
        listing = _listing_kind(words)
    return Verdict(
        "METADATA",
        [f"metadata_statement:{verb}"],
        refs,
        verb=verb,
        listing_kinds=(listing,) if listing else (),
    )


_SHOW_STOP_WORDS = frozenset({"IN", "ON", "TO", "OF", "LIKE", "STARTS", "LIMIT", "FROM", "HISTORY"})


def _listing_kind(words: list[str]) -> str | None:
    """SHOW TERSE MATERIALIZED VIEWS IN ... -> MATERIALIZED_VIEW (for excluded object types)."""
    kept: list[str] = []
    for word in (w.upper() for w in words):
        if word in _SHOW_STOP_WORDS:
            break
        if word != "TERSE":
            kept.append(word)
    if not kept:
        return None
    kind = normalize_kind(" ".join(kept))
    if kind.endswith("IES"):
        return kind[:-3] + "Y"
    return kind[:-1] if kind.endswith("S") else kind


def _explain(
    tree: exp.Command, policy: GuardPolicy, refs: list[ObjectRef], classify_text: TextClassifier
) -> Verdict:
    """EXPLAIN compiles the statement and returns its plan; nothing runs, so it is METADATA whatever the
    statement - as long as the statement is one analysable statement (its objects are still checked)."""
    body = tree.expression.this if isinstance(tree.expression, exp.Literal) else str(tree.expression or "")
    inner_sql = re.sub(r"^\s*USING\s+\w+\s+", "", body, flags=re.I)
    inner = classify_text(inner_sql, policy)
    refs = [*refs, *inner.refs]
    if any(r.split(":", 1)[0] in UNANALYSABLE for r in inner.reasons):
        cls = "WRITE" if inner.cls == "WRITE" else "DATA"
        return Verdict(cls, ["explain", *inner.reasons], refs, False, False, "EXPLAIN", inner.opaque_source)
    return Verdict(
        "METADATA", ["explain", *inner.reasons], refs, verb="EXPLAIN", opaque_source=inner.opaque_source
    )


def _query(
    tree: exp.Expression, toks: list[Token], scan: Scan, refs: list[ObjectRef], policy: GuardPolicy, verb: str
) -> Verdict:
    # `(VALUES ...) v(x)` and `WITH g(v) AS` look like calls in the token stream.
    aliases = {a.name.upper() for a in tree.find_all(exp.TableAlias) if a.args.get("columns")}
    calls = [(n, q) for n, q in tk.call_names(toks) if q or n not in aliases]
    quoted = [f"quoted_function_name:{n}" for n, q in calls if q]
    unverified = [f"unverified_function:{n}" for n, q in calls if not q and n not in _METADATA_CALLS]
    blockers = dedupe([*scan.blockers, *quoted, *unverified])
    if not scan.sources and not blockers and not (scan.has_columns and scan.metadata_sources == 0):
        reasons = [f"metadata_view:{r.text}" for r in refs if r.metadata]
        reasons += [
            f"metadata_function:{n}"
            for n, _ in calls
            if n in METADATA_FUNCTIONS or n in METADATA_TABLE_FUNCTIONS
        ]
        return Verdict("METADATA", reasons or ["constant_select"], refs, verb=verb)
    if scan.has_columns and not scan.sources and scan.metadata_sources == 0:
        blockers.append("column_without_source")
    shape = count_query_issues(tree, policy) if isinstance(tree, exp.Select) else tree_features(tree, policy)
    if isinstance(tree, exp.Select) and not shape:
        # The AST proved where each call sits; the names as written must still be Snowflake built-ins.
        bad_calls = [
            *quoted,
            *(f"unverified_function:{n}" for n, q in calls if not q and n not in _SCALAR_CALLS),
        ]
        bad_calls += [
            b for b in scan.blockers if b.startswith(("session_variable", "bind_parameter", "udf:"))
        ]
        if not bad_calls:
            return Verdict("SCALAR", ["count_aggregate"], refs, verb=verb, opaque_source=scan.opaque_source)
        shape = bad_calls
    if not shape and not isinstance(tree, exp.Select):
        shape = [f"query_shape:{type(tree).__name__.upper()}"]
    stats_ok = (
        isinstance(tree, exp.Select)
        and not stats_issues(tree, policy)
        and not quoted
        and not unverified
        and not scan.names_unsafe
        and not scan.opaque_source
    )
    reasons = dedupe([*shape, *scan.sources, *blockers]) or ["reads_table_rows"]
    return Verdict("DATA", reasons, refs, stats_ok, not scan.names_unsafe, verb, scan.opaque_source)
