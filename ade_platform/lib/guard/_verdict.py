"""A guardrail verdict, and what happens to verdicts that cannot be trusted as they stand.

`Verdict` is one statement's class with its reasons and referenced objects. The helpers here combine the
verdicts of a batch (`merge`), degrade a verdict whose text another splitter might read differently
(`raw_flags`, `distrust`), give the verdict of a text that could not be analysed at all (`unanalysable`) and
turn any statement that reaches session state into WRITE (`session_checked`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlglot.tokens import Token

from ade_platform.lib.guard import _tokens as tk
from ade_platform.lib.guard._catalog import READ_VERBS, WRITE_WORDS
from ade_platform.lib.guard._refs import ObjectRef, display
from ade_platform.lib.guard.policy import normalize_kind

CLASSES = ("METADATA", "SCALAR", "DATA", "WRITE")
RANK = {c: i for i, c in enumerate(CLASSES)}
# Reasons meaning the text was not analysed as one statement: nothing about it is proven.
UNANALYSABLE = frozenset(
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
WRITE_WORD_RE = re.compile(
    r"(?<![A-Za-z0-9_$])(" + "|".join(sorted(WRITE_WORDS)) + r")(?![A-Za-z0-9_$])", re.I
)


@dataclass
class Verdict:
    cls: str
    reasons: list[str]
    refs: list[ObjectRef] = field(default_factory=list)
    stats_safe: bool = False
    names_safe: bool = True
    verb: str = ""
    opaque_source: bool = False
    listing_kinds: tuple[str, ...] = ()


def dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def session_checked(verdict: Verdict, session: list[str]) -> Verdict:
    """A statement that reaches an earlier statement's result or a session variable, or creates a temporary
    object, is WRITE whatever else it is: a session shared by calls must not carry anything from one call to
    the next (decide() refuses these reasons in every tool, execute_ddl included)."""
    if not session:
        return verdict
    reasons = dedupe([*session, *verdict.reasons])
    return Verdict("WRITE", reasons, verdict.refs, False, False, verdict.verb, verdict.opaque_source)


def raw_flags(sql: str, statements: int) -> list[str]:
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


def distrust(verdict: Verdict, sql: str, flags: list[str]) -> Verdict:
    cls = verdict.cls if RANK[verdict.cls] >= RANK["DATA"] else "DATA"
    reasons = [*flags, *verdict.reasons]
    match = WRITE_WORD_RE.search(sql)
    if cls != "WRITE" and match:
        cls = "WRITE"
        reasons.append(f"write_keyword_in_text:{match.group(1).upper()}")
    return Verdict(cls, dedupe(reasons), verdict.refs, False, False, verdict.verb, verdict.opaque_source)


def merge(verdicts: list[Verdict]) -> Verdict:
    cls = max((v.cls for v in verdicts), key=RANK.__getitem__)
    refs: list[ObjectRef] = []
    listings = tuple(k for v in verdicts for k in v.listing_kinds)
    for v in verdicts:
        refs.extend(r for r in v.refs if all((r.text, r.kind) != (x.text, x.kind) for x in refs))
    reasons = dedupe(r for v in verdicts for r in v.reasons)
    opaque = any(v.opaque_source for v in verdicts)
    return Verdict(cls, reasons, refs, False, False, "BATCH", opaque, listing_kinds=listings)


def unanalysable(sql: str, tokens: list[Token] | None, code: str) -> Verdict:
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
    match = WRITE_WORD_RE.search(sql)
    if match:
        cls = "WRITE"
        reasons.append(f"write_keyword_in_text:{match.group(1).upper()}")
    return Verdict(cls, dedupe(reasons), refs, False, False, verb)
