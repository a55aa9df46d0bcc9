"""Classify one SQL text as METADATA / SCALAR / DATA / WRITE on the sqlglot (Snowflake) AST.

Deny by default: a statement is METADATA or SCALAR only when it is *proven* to be, WRITE when it may
change anything, DATA otherwise. DATA still executes (its result is redacted), so anything whose side
effects cannot be ruled out - an unknown statement verb, a SYSTEM$ function, a table function that may be
a stored procedure, an unanalysable batch containing a write keyword - is WRITE, which execute_sql refuses.

This module reads the text (length, tokens, statement boundaries, the parse) and checks exclusions;
`_statement.py` judges each parsed statement and `_verdict.py` combines and degrades the verdicts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.tokens import Token

from ade_platform.lib.guard import _ddl
from ade_platform.lib.guard import _tokens as tk
from ade_platform.lib.guard._exclude import check_exclusions
from ade_platform.lib.guard._reasons import REASON_TEXT
from ade_platform.lib.guard._statement import analyse, metadata_from_tokens
from ade_platform.lib.guard._verdict import CLASSES as CLASSES  # re-exported: the classes, lowest first
from ade_platform.lib.guard._verdict import (
    Verdict,
    dedupe,
    distrust,
    merge,
    raw_flags,
    session_checked,
    unanalysable,
)
from ade_platform.lib.guard.policy import GuardPolicy


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
        reasons=dedupe(reasons),
        objects=dedupe(r.text for r in refs),
        excluded=dedupe(excluded),
        stats_safe=verdict.cls == "DATA" and verdict.stats_safe,
        names_safe=verdict.cls != "DATA" or verdict.names_safe,
        statement=verdict.verb,
    )


def _classify(sql: str, policy: GuardPolicy) -> Verdict:
    if len(sql) > policy.max_sql_length:
        return session_checked(unanalysable(sql, None, "too_long"), tk.session_reach_in_text(sql))
    tokens = tk.tokenize(sql)
    if tokens is None:
        return session_checked(unanalysable(sql, None, "tokenize_error"), tk.session_reach_in_text(sql))
    verdict = _reviewed(sql, tokens, policy, _classify_tokens(sql, tokens, policy))
    session = tk.session_reach(tokens, code_strings=verdict.cls == "WRITE") + tk.session_objects(tokens)
    return session_checked(verdict, session)


def _reviewed(sql: str, tokens: list[Token], policy: GuardPolicy, verdict: Verdict) -> Verdict:
    """Every DDL statement of the text against the allow-list of kinds, and its bodies as statements
    (`_ddl.py`), whether or not sqlglot could parse it: the objects the bodies name join the verdict's."""
    reviews = [
        r
        for toks in tk.split_statements(tokens)
        if (r := _ddl.review(toks, sql, policy, _classify)) is not None
    ]
    if not reviews:
        return verdict
    reasons = list(verdict.reasons)
    refs = list(verdict.refs)
    for r in reviews:
        if r.task_run:  # EXECUTE TASK allowed by the policy: the body it runs is the operator's to vouch for
            reasons = [x for x in reasons if not x.startswith("opaque_code:EXEC")]
        reasons += r.reasons + (["write_embeds_query"] if r.embeds_query else [])
        refs += [x for x in r.refs if all((x.text, x.kind) != (y.text, y.kind) for y in refs)]
    opaque = verdict.opaque_source or any(r.opaque_source for r in reviews)
    return Verdict("WRITE", dedupe(reasons), refs, False, False, verdict.verb, opaque, verdict.listing_kinds)


def _classify_tokens(sql: str, tokens: list[Token], policy: GuardPolicy) -> Verdict:
    statements = tk.split_statements(tokens)
    if not statements:
        return Verdict("DATA", ["empty_statement"], names_safe=False)
    try:
        with _PARSER_NOTES.active():
            parsed = sqlglot.parse(sql, read="snowflake")
        trees = [t for t in parsed if t is not None and not isinstance(t, exp.Semicolon)]
    except Exception:  # any parser failure means we cannot prove anything about the text
        if len(statements) == 1 and not raw_flags(sql, 1):
            fallback = metadata_from_tokens(statements[0])
            if fallback is not None:
                return fallback
        return unanalysable(sql, tokens, "parse_error")
    if len(trees) != len(statements):
        return unanalysable(sql, tokens, "statement_split_mismatch")
    try:
        verdicts = [
            analyse(tree, toks, policy, _classify) for tree, toks in zip(trees, statements, strict=True)
        ]
    except RecursionError:  # pathologically deep expressions: refuse to reason about them
        return unanalysable(sql, tokens, "too_complex")
    verdict = verdicts[0] if len(verdicts) == 1 else merge(verdicts)
    flags = raw_flags(sql, len(statements))
    if len(verdicts) > 1:
        if not flags and all(v.cls == "METADATA" for v in verdicts):
            # Every member only reads metadata, and every splitter agrees on the boundaries.
            verdict.reasons.insert(0, "multi_statement")
            return verdict
        flags.insert(0, "multi_statement")
    if flags:
        verdict = distrust(verdict, sql, flags)
    return verdict
