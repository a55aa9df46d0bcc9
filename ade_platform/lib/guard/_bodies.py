"""The code inside a DDL statement: where each body starts, and how a SQL scripting block splits into statements.

Snowflake runs the body of a task, an alert (its condition and its action), a stored procedure and a SQL
function later, as statements of their own; a check of the CREATE alone would judge a different text from the
one that runs. This module only finds the texts (plain after ``AS``, a quoted string with its escapes already
decoded by the guard's tokenizer, or ``$$...$$``) and cuts scripting blocks (``DECLARE ... BEGIN ... END``,
``LET``, ``IF``, ``FOR``, ``RETURN TABLE(...)``) into what runs: SQL statements, expressions and conditions.
Judging them is `_ddl.py`'s part, with the guard's full top-level rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot.parser import Parser
from sqlglot.tokens import Token, TokenType

from ade_platform.lib.guard import _tokens as tk

_STRINGS = frozenset({TokenType.STRING, TokenType.RAW_STRING, TokenType.HEREDOC_STRING})
# Scripting statements that carry no SQL of their own when they are only names (FETCH c INTO a, b).
_NAME_ONLY_UNITS = frozenset({"FETCH", "CLOSE", "BREAK", "CONTINUE", "LEAVE", "ITERATE", "RAISE", "NULL"})
_NAME_ONLY_WORDS = frozenset(
    {"INTO", "FETCH", "CLOSE", "BREAK", "CONTINUE", "LEAVE", "ITERATE", "RAISE", "NULL"}
)
_TYPE_LIKE = frozenset(
    {
        TokenType.VAR,
        TokenType.IDENTIFIER,
        TokenType.NUMBER,
        TokenType.L_PAREN,
        TokenType.R_PAREN,
        TokenType.COMMA,
    }
)
_END_WORDS = frozenset({"IF", "FOR", "WHILE", "LOOP", "CASE", "REPEAT"})


@dataclass
class Piece:
    """One text that runs: ``statement`` (classified as written), ``expression`` (classified as
    ``SELECT <text>``) or ``query`` (a statement that must only read)."""

    role: str
    text: str


@dataclass
class Script:
    pieces: list[Piece] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # body_refused:<what> reasons


def word(tok: Token) -> str:
    return "" if tok.token_type in _STRINGS else tok.text.upper()


def tokenize_words(text: str) -> list[str] | None:
    """The words of ``text`` as the guard's tokenizer reads them (strings are empty words)."""
    tokens = tk.tokenize(text)
    return None if tokens is None else [word(t) for t in tokens]


def depth0(tokens: list[Token], start: int = 0) -> list[tuple[int, Token]]:
    """Tokens outside any parentheses, with their index."""
    out, depth = [], 0
    for i in range(start, len(tokens)):
        tok = tokens[i]
        if tok.token_type == TokenType.L_PAREN:
            depth += 1
        elif tok.token_type == TokenType.R_PAREN:
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append((i, tok))
    return out


def closing(tokens: list[Token], open_at: int) -> int:
    """Index of the ')' matching the '(' at ``open_at`` (len(tokens) when unbalanced)."""
    depth = 0
    for i in range(open_at, len(tokens)):
        if tokens[i].token_type == TokenType.L_PAREN:
            depth += 1
        elif tokens[i].token_type == TokenType.R_PAREN:
            depth -= 1
            if depth == 0:
                return i
    return len(tokens)


def span(sql: str, tokens: list[Token], start: int, end: int | None = None) -> str:
    """The source text of tokens[start:end]; a lone string token is its decoded content (what runs)."""
    end = len(tokens) if end is None else end
    if start >= end:
        return ""
    if end - start == 1 and tokens[start].token_type in _STRINGS:
        return tokens[start].text
    return sql[tokens[start].start : tokens[end - 1].end + 1]


def split_script(text: str) -> Script:
    """A body that runs as statements: a plain statement, or a scripting block cut into what runs."""
    script = Script()
    tokens = tk.tokenize(text)
    if tokens is None:
        script.refused.append("body_refused:tokenize_error")
        return script
    words = [word(t) for t in tokens]
    for i, w in enumerate(words[:-1]):
        # Anywhere in the block, whatever encloses it: a statement built at run time, or code we cannot see.
        if w == "EXECUTE" and words[i + 1] == "IMMEDIATE":
            script.refused.append("body_refused:opaque_code:EXECUTE_IMMEDIATE")
        if w == "CALL" and tokens[i + 1].token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            script.refused.append("body_refused:opaque_code:CALL")
    declaring = False
    for unit in tk.split_statements(tokens):
        declaring = _unit(text, unit, script, declaring)
    script.refused = list(dict.fromkeys(script.refused))
    return script


def _unit(text: str, unit: list[Token], script: Script, declaring: bool) -> bool:
    """One ';'-separated unit: strip the control headers, keep what runs. Returns whether a DECLARE
    section is still open."""
    p = 0
    while p < len(unit):
        w = word(unit[p])
        nxt = word(unit[p + 1]) if p + 1 < len(unit) else ""
        if w == "DECLARE":
            declaring, p = True, p + 1
            continue
        if w == "BEGIN":
            if nxt in ("TRANSACTION", "WORK", "NAME") or p + 1 == len(unit):
                return declaring  # BEGIN [TRANSACTION]: a transaction boundary, no SQL of its own
            declaring, p = False, p + 1
            continue
        if w == "END":
            rest = [word(t) for t in unit[p + 1 :]]
            if len(rest) <= 2 and (not rest or rest[0] in _END_WORDS or len(rest) == 1):
                return declaring
            script.refused.append("body_refused:construct:END")
            return declaring
        if w in ("EXCEPTION", "ELSE", "LOOP", "REPEAT"):
            p += 1
            continue
        if w in ("IF", "ELSEIF", "WHEN", "WHILE", "UNTIL"):
            stop = "DO" if w == "WHILE" else "END" if w == "UNTIL" else "THEN"
            q = _find(unit, stop, p + 1)
            if q is None:
                script.refused.append(f"body_refused:construct:{w}")
                return declaring
            script.pieces.append(Piece("expression", span(text, unit, p + 1, q)))
            if w == "UNTIL":
                return declaring
            p = q + 1
            continue
        if w == "CASE":
            q = _find(unit, "WHEN", p + 1)
            if q is None:
                script.refused.append("body_refused:construct:CASE")
                return declaring
            if q > p + 1:
                script.pieces.append(Piece("expression", span(text, unit, p + 1, q)))
            p = q
            continue
        if w == "FOR":
            q = _find(unit, "DO", p + 1)
            inside = _find(unit, "IN", p + 1)
            if q is None or inside is None:
                script.refused.append("body_refused:construct:FOR")
                return declaring
            b = inside + 1 + (inside + 1 < q and word(unit[inside + 1]) == "REVERSE")
            names_only = all(t.token_type in (TokenType.VAR, TokenType.IDENTIFIER) for t in unit[b:q])
            if not names_only:  # a cursor or resultset name runs nothing; bounds and queries do
                to = _find(unit, "TO", b, q)
                cuts = [(b, q)] if to is None else [(b, to), (to + 1, q)]
                script.pieces.extend(Piece("expression", span(text, unit, x, y)) for x, y in cuts)
            p = q + 1
            continue
        if w == "LET" or declaring:
            _declaration(text, unit, p + (w == "LET"), script)
            return declaring
        if nxt == ":=" or (p + 1 < len(unit) and unit[p + 1].token_type == TokenType.COLON_EQ):
            script.pieces.append(Piece("expression", span(text, unit, p + 2)))
            return declaring
        if w == "RETURN":
            _return(text, unit, p + 1, script)
            return declaring
        if w == "OPEN":
            using = _find(unit, "USING", p + 1)
            if using is not None and using + 1 < len(unit):
                script.pieces.append(Piece("expression", span(text, unit, using + 1)))
            return declaring
        if w in _NAME_ONLY_UNITS:
            if not all(
                t.token_type in (TokenType.VAR, TokenType.IDENTIFIER, TokenType.COMMA, TokenType.COLON)
                or word(t) in _NAME_ONLY_WORDS
                for t in unit[p:]
            ):
                script.refused.append(f"body_refused:construct:{w}")
            return declaring
        if w in ("ASYNC", "AWAIT"):
            script.refused.append(f"body_refused:construct:{w}")
            return declaring
        script.pieces.append(Piece("statement", span(text, unit, p)))
        return declaring
    return declaring


def _find(unit: list[Token], wanted: str, start: int, stop: int | None = None) -> int | None:
    for i, tok in depth0(unit[: stop if stop is not None else len(unit)], start):
        if word(tok) == wanted:
            return i
    return None


def _declaration(text: str, unit: list[Token], p: int, script: Script) -> None:
    """``name [type] [DEFAULT | :=] expr``, ``name CURSOR FOR query``, ``name RESULTSET := (query)``,
    ``name EXCEPTION (n, 'msg')``."""
    words = [word(t) for t in unit]
    if p + 1 < len(unit) and words[p + 1] == "EXCEPTION":
        return
    cursor = _find(unit, "CURSOR", p)
    if cursor is not None and cursor + 1 < len(unit) and words[cursor + 1] == "FOR":
        script.pieces.append(Piece("query", span(text, unit, cursor + 2)))
        return
    for i, tok in depth0(unit, p):
        if words[i] == "DEFAULT" or tok.token_type == TokenType.COLON_EQ:
            script.pieces.append(Piece("expression", span(text, unit, i + 1)))
            return
    # `name type`: anything else in a declaration is not one, and would go unchecked as one.
    if not all(t.token_type in _TYPE_LIKE or t.token_type in Parser.TYPE_TOKENS for t in unit[p:]):
        script.refused.append("body_refused:construct:DECLARE")


def _return(text: str, unit: list[Token], p: int, script: Script) -> None:
    """``RETURN expr`` or ``RETURN TABLE(resultset)``: a resultset name runs nothing, anything else does."""
    if p >= len(unit):
        return
    if word(unit[p]) == "TABLE" and p + 1 < len(unit) and unit[p + 1].token_type == TokenType.L_PAREN:
        end = closing(unit, p + 1)
        inner = unit[p + 2 : end]
        if len(inner) == 1 and inner[0].token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            if end + 1 < len(unit):
                script.refused.append("body_refused:construct:RETURN")
            return
    script.pieces.append(Piece("expression", span(text, unit, p)))
