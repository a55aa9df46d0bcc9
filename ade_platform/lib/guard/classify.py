"""Classify one SQL text as METADATA / SCALAR / DATA / WRITE on the sqlglot (Snowflake) AST.

Deny by default: a statement is METADATA or SCALAR only when it is *proven* to be, WRITE when it may
change anything, DATA otherwise. DATA still executes (its result is redacted), so anything whose side
effects cannot be ruled out - an unknown statement verb, a SYSTEM$ function, a table function that may be
a stored procedure, an unanalysable batch containing a write keyword - is WRITE, which execute_sql refuses.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

import sqlglot
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
    WRITE_WORDS,
)
from ade_platform.lib.guard._exclude import check_exclusions
from ade_platform.lib.guard._reasons import REASON_TEXT
from ade_platform.lib.guard._refs import ObjectRef, Scan, display, scan_tree
from ade_platform.lib.guard._rules import stats_issues, tree_features
from ade_platform.lib.guard._scalar import count_query_issues
from ade_platform.lib.guard.policy import GuardPolicy, normalize_kind

CLASSES = ("METADATA", "SCALAR", "DATA", "WRITE")
_RANK = {c: i for i, c in enumerate(CLASSES)}
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
# Reasons meaning the text was not analysed as one statement: nothing about it is proven.
_UNANALYSABLE = frozenset(
    {
        "too_long",
        "tokenize_error",
        "parse_error",
        "statement_split_mismatch",
        "too_complex",
        "multi_statement",
        "semicolon_in_text",
        "pipe_operator",
        "ambiguous_comment",
        "empty_statement",
    }
)
_WRITE_WORD_RE = re.compile(
    r"(?<![A-Za-z0-9_$])(" + "|".join(sorted(WRITE_WORDS)) + r")(?![A-Za-z0-9_$])", re.I
)


class _ParserNotes(logging.Filter):
    """Drops sqlglot's warnings raised while *this* module parses ("contains unsupported syntax. Falling
    back to parsing as a 'Command'"): the fallback is expected and classified conservatively, and a
    warning per statement would drown `ade guard classify` and the gateway's log. Counted, not lost."""

    def __init__(self) -> None:
        super().__init__()
        self._local = threading.local()
        self.count = 0

    @contextmanager
    def active(self) -> Iterator[None]:
        self._local.on = True
        try:
            yield
        finally:
            self._local.on = False

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(self._local, "on", False) and record.levelno <= logging.WARNING:
            self.count += 1
            return False
        return True


_PARSER_NOTES = _ParserNotes()
logging.getLogger("sqlglot").addFilter(_PARSER_NOTES)


def parser_warning_count() -> int:
    """How many sqlglot parser warnings classification has swallowed in this process."""
    return _PARSER_NOTES.count


@dataclass
class Classification:
    """The verdict. ``excluded`` non-empty means: refuse, whatever the class.

    ``stats_safe``/``names_safe`` say whether a redacted DATA result may still report row count and null
    percentages, and real column names; both are False when they could answer a predicate or carry values.
    """

    classification: str
    reasons: list[str]
    objects: list[str]
    excluded: list[str]
    stats_safe: bool = False
    names_safe: bool = False
    statement: str = ""

    def explain(self) -> list[str]:
        return [f"{r} - {REASON_TEXT.get(r.split(':', 1)[0], '')}".rstrip(" -") for r in self.reasons]


@dataclass
class _Verdict:
    cls: str
    reasons: list[str]
    refs: list[ObjectRef] = field(default_factory=list)
    stats_safe: bool = False
    names_safe: bool = True
    verb: str = ""
    opaque_source: bool = False
    listing_kinds: tuple[str, ...] = ()


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def classify_sql(
    sql: str,
    policy: GuardPolicy,
    *,
    object_types: Mapping[str, str] | None = None,
    dependencies: Mapping[str, Iterable[str]] | None = None,
) -> Classification:
    """Classify ``sql`` and check every referenced object against the policy's exclusions."""
    verdict = _classify(sql, policy)
    refs = verdict.refs
    ex = check_exclusions(
        refs,
        policy,
        opaque_source=verdict.opaque_source,
        object_types=object_types,
        dependencies=dependencies,
    )
    excluded = list(ex.excluded)
    reasons = [*verdict.reasons, *ex.reasons]
    for kind in verdict.listing_kinds:
        if kind in policy.excluded_object_types:
            excluded.append(f"SHOW {kind}")
            reasons.append(f"excluded_type:{kind}:SHOW")
    return Classification(
        classification=verdict.cls,
        reasons=_dedupe(reasons),
        objects=_dedupe(r.text for r in refs),
        excluded=_dedupe(excluded),
        stats_safe=verdict.cls == "DATA" and verdict.stats_safe,
        names_safe=verdict.cls != "DATA" or verdict.names_safe,
        statement=verdict.verb,
    )


def _classify(sql: str, policy: GuardPolicy) -> _Verdict:
    if len(sql) > policy.max_sql_length:
        return _session_checked(_unanalysable(sql, None, "too_long"), tk.session_reach_in_text(sql))
    tokens = tk.tokenize(sql)
    if tokens is None:
        return _session_checked(_unanalysable(sql, None, "tokenize_error"), tk.session_reach_in_text(sql))
    verdict = _classify_tokens(sql, tokens, policy)
    session = tk.session_reach(tokens, code_strings=verdict.cls == "WRITE") + tk.session_objects(tokens)
    return _session_checked(verdict, session)


def _session_checked(verdict: _Verdict, session: list[str]) -> _Verdict:
    """A statement that reaches an earlier statement's result or a session variable, or creates a temporary
    object, is WRITE whatever else it is: a session shared by calls must not carry anything from one call to
    the next (decide() refuses these reasons in every tool, execute_ddl included)."""
    if not session:
        return verdict
    reasons = _dedupe([*session, *verdict.reasons])
    return _Verdict("WRITE", reasons, verdict.refs, False, False, verdict.verb, verdict.opaque_source)


def _classify_tokens(sql: str, tokens: list[Token], policy: GuardPolicy) -> _Verdict:
    statements = tk.split_statements(tokens)
    if not statements:
        return _Verdict("DATA", ["empty_statement"], names_safe=False)
    try:
        with _PARSER_NOTES.active():
            parsed = sqlglot.parse(sql, read="snowflake")
        trees = [t for t in parsed if t is not None and not isinstance(t, exp.Semicolon)]
    except Exception:  # any parser failure means we cannot prove anything about the text
        if len(statements) == 1 and not _raw_flags(sql, 1):
            fallback = _metadata_from_tokens(statements[0])
            if fallback is not None:
                return fallback
        return _unanalysable(sql, tokens, "parse_error")
    if len(trees) != len(statements):
        return _unanalysable(sql, tokens, "statement_split_mismatch")
    try:
        verdicts = [_analyse(tree, toks, policy) for tree, toks in zip(trees, statements, strict=True)]
    except RecursionError:  # pathologically deep expressions: refuse to reason about them
        return _unanalysable(sql, tokens, "too_complex")
    verdict = verdicts[0] if len(verdicts) == 1 else _merge(verdicts)
    flags = _raw_flags(sql, len(statements))
    if len(verdicts) > 1:
        if not flags and all(v.cls == "METADATA" for v in verdicts):
            # Every member only reads metadata, and every splitter agrees on the boundaries.
            verdict.reasons.insert(0, "multi_statement")
            return verdict
        flags.insert(0, "multi_statement")
    if flags:
        verdict = _distrust(verdict, sql, flags)
    return verdict


def _metadata_from_tokens(toks: list[Token]) -> _Verdict | None:
    """SHOW/DESCRIBE forms sqlglot cannot parse (DESCRIBE USER u): metadata if nothing else is in the text."""
    verb = tk.first_word(toks)
    if verb not in {"SHOW", "DESC", "DESCRIBE"} or len(toks) < 2:
        return None
    if any(t.token_type in (TokenType.SELECT, TokenType.WITH, TokenType.DARROW) for t in toks):
        return None
    verdict = _metadata_command(exp.Command(this=verb), verb, toks, _token_refs(toks))
    verdict.reasons.append("parsed_from_tokens")
    return verdict


def _raw_flags(sql: str, statements: int) -> list[str]:
    """Text features where another SQL splitter (the snow CLI's, Snowflake's) might disagree with sqlglot.

    A ';' inside a string or a comment separates nothing, as long as an independent scan of the text
    (Snowflake's lexical rules, as the connector's splitter applies them) finds the same boundaries.
    """
    flags = []
    if ";" in sql and tk.count_statements(sql) != statements:
        flags.append("semicolon_in_text")
    if "->>" in sql:
        flags.append("pipe_operator")
    depth_issue = False
    pos = sql.find("/*")
    while pos != -1 and not depth_issue:
        end = sql.find("*/", pos + 2)
        inner = sql[pos + 2 : end if end != -1 else len(sql)]
        depth_issue = "/*" in inner
        pos = sql.find("/*", end + 2) if end != -1 else -1
    if depth_issue:
        flags.append("ambiguous_comment")
    return flags


def _distrust(verdict: _Verdict, sql: str, flags: list[str]) -> _Verdict:
    cls = verdict.cls if _RANK[verdict.cls] >= _RANK["DATA"] else "DATA"
    reasons = [*flags, *verdict.reasons]
    match = _WRITE_WORD_RE.search(sql)
    if cls != "WRITE" and match:
        cls = "WRITE"
        reasons.append(f"write_keyword_in_text:{match.group(1).upper()}")
    return _Verdict(cls, _dedupe(reasons), verdict.refs, False, False, verdict.verb, verdict.opaque_source)


def _merge(verdicts: list[_Verdict]) -> _Verdict:
    cls = max((v.cls for v in verdicts), key=_RANK.__getitem__)
    refs: list[ObjectRef] = []
    listings = tuple(k for v in verdicts for k in v.listing_kinds)
    for v in verdicts:
        refs.extend(r for r in v.refs if all((r.text, r.kind) != (x.text, x.kind) for x in refs))
    reasons = _dedupe(r for v in verdicts for r in v.reasons)
    opaque = any(v.opaque_source for v in verdicts)
    return _Verdict(cls, reasons, refs, False, False, "BATCH", opaque, listing_kinds=listings)


def _unanalysable(sql: str, tokens: list[Token] | None, code: str) -> _Verdict:
    """Nothing can be proven: DATA at best, WRITE if any write keyword appears anywhere in the text."""
    refs: list[ObjectRef] = []
    reasons = [code]
    cls = "DATA"
    if tokens:
        verb = tk.first_word(tokens)
        for parts, kind in tk.dotted_names(tokens, all_names=True):
            refs.append(ObjectRef(display(parts), tuple(parts), normalize_kind(kind) if kind else "TABLE"))
        # Strings may be object names too (IDENTIFIER('db.s.t'), GET_DDL('table', 'x')).
        for text in tk.literal_texts(tokens):
            if re.fullmatch(r'[A-Za-z0-9_$."]{1,255}', text) and not text.replace(".", "").isdigit():
                parts = text.upper().split(".")
                refs.append(ObjectRef(display(parts), tuple(parts), "TABLE"))
        if verb not in READ_VERBS:
            cls = "WRITE"
            reasons.append(f"write_statement:{verb}")
    else:
        verb = ""
        refs.append(ObjectRef("<UNANALYSED>", (), "TABLE", resolved=False))
    for stage in tk.stage_names(sql):
        parts = tuple(stage[1:].split("/", 1)[0].upper().split("."))
        refs.append(ObjectRef("@" + display(parts), parts, "STAGE"))
    match = _WRITE_WORD_RE.search(sql)
    if match:
        cls = "WRITE"
        reasons.append(f"write_keyword_in_text:{match.group(1).upper()}")
    return _Verdict(cls, _dedupe(reasons), refs, False, False, verb)


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
    return _dedupe(reasons)


def _analyse(tree: exp.Expression, toks: list[Token], policy: GuardPolicy) -> _Verdict:
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
        return _Verdict("WRITE", [f"write_statement:{verb}"], refs, False, False, verb)
    write = _write_reasons(tree, verb, toks, scan, policy)
    if write:
        return _Verdict("WRITE", write, refs, False, False, verb, scan.opaque_source)
    if isinstance(tree, exp.Show) or (isinstance(tree, exp.Command) and verb in {"SHOW", "DESC", "DESCRIBE"}):
        return _metadata_command(tree, verb, toks, refs)
    if isinstance(tree, exp.Describe):
        if isinstance(tree.this, exp.Query):
            return _Verdict("DATA", ["describe_query", *scan.sources], refs, False, True, verb)
        return _Verdict("METADATA", ["metadata_statement:DESCRIBE"], refs, verb=verb)
    if isinstance(tree, exp.ListStage) or verb in {"LIST", "LS"}:
        # File names, sizes and dates of a stage: metadata (stage exclusions apply; see README for paths).
        return _Verdict("METADATA", ["metadata_statement:LIST"], refs, verb=verb)
    if isinstance(tree, exp.Command) and verb == "EXPLAIN":
        return _explain(tree, policy, refs)
    if isinstance(tree, _QUERY_TYPES):
        return _query(tree, toks, scan, refs, policy, verb)
    return _Verdict("DATA", [f"unknown_statement:{type(tree).__name__.upper()}"], refs, False, False, verb)


def _metadata_command(tree: exp.Expression, verb: str, toks: list[Token], refs: list[ObjectRef]) -> _Verdict:
    if any(t.token_type in (TokenType.SELECT, TokenType.WITH, TokenType.DARROW) for t in toks):
        return _Verdict("DATA", ["metadata_command_with_query"], refs, False, False, verb)
    listing = None
    if verb == "SHOW":
        words = str(tree.this).split() if isinstance(tree, exp.Show) else [t.text for t in toks[1:]]
        listing = _listing_kind(words)
    return _Verdict(
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


def _explain(tree: exp.Command, policy: GuardPolicy, refs: list[ObjectRef]) -> _Verdict:
    """EXPLAIN compiles the statement and returns its plan; nothing runs, so it is METADATA whatever the
    statement - as long as the statement is one analysable statement (its objects are still checked)."""
    body = tree.expression.this if isinstance(tree.expression, exp.Literal) else str(tree.expression or "")
    inner_sql = re.sub(r"^\s*USING\s+\w+\s+", "", body, flags=re.I)
    inner = _classify(inner_sql, policy)
    refs = [*refs, *inner.refs]
    if any(r.split(":", 1)[0] in _UNANALYSABLE for r in inner.reasons):
        cls = "WRITE" if inner.cls == "WRITE" else "DATA"
        return _Verdict(cls, ["explain", *inner.reasons], refs, False, False, "EXPLAIN", inner.opaque_source)
    return _Verdict(
        "METADATA", ["explain", *inner.reasons], refs, verb="EXPLAIN", opaque_source=inner.opaque_source
    )


def _query(
    tree: exp.Expression, toks: list[Token], scan: Scan, refs: list[ObjectRef], policy: GuardPolicy, verb: str
) -> _Verdict:
    # `(VALUES ...) v(x)` and `WITH g(v) AS` look like calls in the token stream.
    aliases = {a.name.upper() for a in tree.find_all(exp.TableAlias) if a.args.get("columns")}
    calls = [(n, q) for n, q in tk.call_names(toks) if q or n not in aliases]
    quoted = [f"quoted_function_name:{n}" for n, q in calls if q]
    unverified = [f"unverified_function:{n}" for n, q in calls if not q and n not in _METADATA_CALLS]
    blockers = _dedupe([*scan.blockers, *quoted, *unverified])
    if not scan.sources and not blockers and not (scan.has_columns and scan.metadata_sources == 0):
        reasons = [f"metadata_view:{r.text}" for r in refs if r.metadata]
        reasons += [
            f"metadata_function:{n}"
            for n, _ in calls
            if n in METADATA_FUNCTIONS or n in METADATA_TABLE_FUNCTIONS
        ]
        return _Verdict("METADATA", reasons or ["constant_select"], refs, verb=verb)
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
            return _Verdict("SCALAR", ["count_aggregate"], refs, verb=verb, opaque_source=scan.opaque_source)
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
    reasons = _dedupe([*shape, *scan.sources, *blockers]) or ["reads_table_rows"]
    return _Verdict("DATA", reasons, refs, stats_ok, not scan.names_unsafe, verb, scan.opaque_source)
