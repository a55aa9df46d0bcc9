"""Token-level views of a statement.

The AST forgets how things were written: sqlglot turns ``"COUNT"(x)`` into a COUNT node and maps
functions of other dialects (``APPROX_DISTINCT``) onto typed nodes, while Snowflake would call a UDF of
that name. Function names are therefore checked as written, from the token stream. Tokens also give
object names for statements sqlglot keeps as opaque commands (``SHOW GRANTS ON TABLE x``, ``CALL p()``).
"""

from __future__ import annotations

import re

from sqlglot.dialects.dialect import Dialect
from sqlglot.parser import Parser
from sqlglot.tokens import Token, TokenType

from ade_platform.lib.guard._catalog import (
    CREATE_MODIFIERS,
    KIND_WORDS,
    NON_CALL_WORDS,
    SESSION_REACH_CALLS,
    SESSION_REACH_NAMES,
    SESSION_SCOPED_MODIFIERS,
)

_DIALECT = Dialect.get_or_raise("snowflake")
_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
_NAME_TYPES = frozenset({TokenType.VAR, TokenType.IDENTIFIER})
# A bare name after these words names an object: SHOW GRANTS ON x, ... IN x, COPY INTO x FROM y.
_OBJECT_PREPOSITIONS = frozenset({"ON", "IN", "FROM", "INTO", "CALL"})
_COMMAND_TOKENS = frozenset({TokenType.COMMAND, TokenType.EXECUTE, TokenType.FETCH, TokenType.RENAME})


def tokenize(sql: str) -> list[Token] | None:
    """Snowflake tokens (comments dropped), or None when the text cannot even be tokenized."""
    try:
        return list(_DIALECT.tokenize(sql))
    except Exception:  # sqlglot raises TokenError and, on odd input, other errors; all mean "unanalysable"
        return None


def expand_commands(tokens: list[Token]) -> list[Token]:
    """sqlglot keeps the rest of a command (CALL x(...), EXECUTE ...) as one string token; re-tokenize it."""
    out: list[Token] = []
    for i, tok in enumerate(tokens):
        if tok.token_type == TokenType.STRING and i > 0 and tokens[i - 1].token_type in _COMMAND_TOKENS:
            inner = tokenize(tok.text)
            if inner is not None:
                out.extend(inner)
                continue
        out.append(tok)
    return out


def split_statements(tokens: list[Token]) -> list[list[Token]]:
    statements: list[list[Token]] = [[]]
    for tok in tokens:
        if tok.token_type == TokenType.SEMICOLON:
            statements.append([])
        else:
            statements[-1].append(tok)
    return [s for s in statements if s]


def first_word(tokens: list[Token]) -> str:
    if not tokens:
        return ""
    tok = tokens[0]
    return "(" if tok.token_type == TokenType.L_PAREN else tok.text.upper()


def _is_name(tok: Token) -> bool:
    return tok.token_type in _NAME_TYPES or bool(_WORD.match(tok.text))


def call_names(tokens: list[Token]) -> list[tuple[str, bool]]:
    """Unqualified function names as written, with whether they were double-quoted.

    A name directly after '.' is qualified (a UDF or an INFORMATION_SCHEMA function); the AST handles those.
    Data type names before '(' (VARCHAR(10)) and clause keywords (IN (...), OVER (...)) are not calls.
    """
    names: list[tuple[str, bool]] = []
    for i, tok in enumerate(tokens[:-1]):
        if tokens[i + 1].token_type != TokenType.L_PAREN or not _is_name(tok):
            continue
        if i > 0 and tokens[i - 1].token_type == TokenType.DOT:
            continue
        quoted = tok.token_type == TokenType.IDENTIFIER
        if not quoted and (tok.token_type in Parser.TYPE_TOKENS or tok.text.upper() in NON_CALL_WORDS):
            continue
        names.append((tok.text if quoted else tok.text.upper(), quoted))
    return names


def dotted_names(tokens: list[Token], *, all_names: bool) -> list[tuple[list[str], str | None]]:
    """Dotted name sequences with the object kind written just before them (TABLE x, ROLE r).

    ``all_names`` also returns single names with no kind word: used when the statement could not be
    parsed, where over-reporting objects is the safe direction for exclusion checks.
    """
    found: list[tuple[list[str], str | None]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not (tok.token_type in _NAME_TYPES or (all_names and _is_name(tok))):
            i += 1
            continue
        if i > 0 and tokens[i - 1].text == "@":
            i += 1  # a stage name; stage_names() reports it with its '@'
            continue
        parts = [tok.text]
        j = i + 1
        while j + 1 < len(tokens) and tokens[j].token_type == TokenType.DOT and _is_name(tokens[j + 1]):
            parts.append(tokens[j + 1].text)
            j += 2
        prev = tokens[i - 1].text.upper() if i > 0 else ""
        kind = prev if prev in KIND_WORDS else None
        if all_names or kind or len(parts) > 1 or prev in _OBJECT_PREPOSITIONS:
            found.append(([p.upper() for p in parts], kind))
        i = j
    return found


def stage_names(sql: str) -> list[str]:
    """``@db.s.stage/path`` references in raw text (stages are not tokens of their own)."""
    return [m.group(0) for m in re.finditer(r'@[%~]?[A-Za-z0-9_$."]*', sql) if len(m.group(0)) > 1]


def literal_texts(tokens: list[Token]) -> list[str]:
    """String and number literals as written (for scrubbing them out of error messages)."""
    kinds = {
        TokenType.STRING,
        TokenType.NUMBER,
        TokenType.RAW_STRING,
        TokenType.HEX_STRING,
        TokenType.NATIONAL_STRING,
    }
    return [t.text for t in tokens if t.token_type in kinds and t.text]


def identifier_texts(tokens: list[Token]) -> set[str]:
    return {t.text.upper() for t in tokens if t.token_type in _NAME_TYPES}


def table_call_names(tokens: list[Token]) -> list[str]:
    """Unqualified names called in table position: ``TABLE(name(...))`` and ``LATERAL name(...)``."""
    names: list[str] = []
    for i, tok in enumerate(tokens[:-2]):
        word = tok.text.upper()
        if word == "TABLE" and tokens[i + 1].token_type == TokenType.L_PAREN:
            j = i + 2
        elif word == "LATERAL":
            j = i + 1
        else:
            continue
        if j + 1 < len(tokens) and _is_name(tokens[j]) and tokens[j + 1].token_type == TokenType.L_PAREN:
            names.append(
                tokens[j].text if tokens[j].token_type == TokenType.IDENTIFIER else tokens[j].text.upper()
            )
    return names


_STRING_TYPES = frozenset({TokenType.STRING, TokenType.RAW_STRING, TokenType.HEREDOC_STRING})
_REACH_IN_TEXT = re.compile(
    r"(?<![A-Za-z0-9_$])(" + "|".join(sorted(SESSION_REACH_NAMES)) + r")(?![A-Za-z0-9_$])", re.I
)


def session_reach(tokens: list[Token], *, code_strings: bool = False) -> list[str]:
    """What in a statement reaches an earlier statement's result or a session-carried value, anywhere in it
    (EXPLAIN bodies, subqueries, DDL): `session_reach:<what>` reasons, empty when nothing does.

    ``code_strings`` also searches string literals, which are code in a CREATE FUNCTION/PROCEDURE body.
    """
    found: list[str] = []
    toks = expand_commands(tokens)
    for statement in split_statements(toks):
        words = [t.text.upper() for t in statement[:3]]
        if words[:1] in (["DESC"], ["DESCRIBE"]) and words[1:2] == ["RESULT"]:
            found.append("session_reach:DESCRIBE_RESULT")  # an earlier result's column names and types
        if words[:1] == ["SHOW"] and "VARIABLES" in [w for w in words[1:] if w != "TERSE"][:1]:
            found.append("session_reach:SHOW_VARIABLES")
    for i, tok in enumerate(toks):
        word = "" if tok.token_type in _STRING_TYPES else tok.text.upper()  # a name, a keyword or a symbol
        after = toks[i + 1] if i + 1 < len(toks) else None
        called = after is not None and after.token_type == TokenType.L_PAREN
        if word in SESSION_REACH_NAMES or (word in SESSION_REACH_CALLS and called):
            found.append(f"session_reach:{word}")
        elif tok.text == "$" and after is not None and after.token_type != TokenType.NUMBER:
            found.append("session_reach:SESSION_VARIABLE")  # $name, ${name}; $1 is a column position
        elif tok.token_type == TokenType.DARROW:
            found.append("session_reach:PIPE_OPERATOR")  # `->> ... $1` reads the previous statement's rows
        elif tok.token_type in _STRING_TYPES and tok.text.startswith("$") and _named_by_string(toks, i):
            found.append("session_reach:SESSION_VARIABLE")  # IDENTIFIER('$t') / TABLE('$t') read variable t
        elif code_strings and tok.token_type in _STRING_TYPES:
            found += [f"session_reach:{m.upper()}" for m in _REACH_IN_TEXT.findall(tok.text)]
    return list(dict.fromkeys(found))


def session_reach_in_text(sql: str) -> list[str]:
    """For text that cannot be tokenized: the names alone, wherever they appear."""
    return list(dict.fromkeys(f"session_reach:{m.upper()}" for m in _REACH_IN_TEXT.findall(sql)))


def _named_by_string(tokens: list[Token], i: int) -> bool:
    return (
        i >= 2
        and tokens[i - 1].token_type == TokenType.L_PAREN
        and tokens[i - 2].text.upper() in ("IDENTIFIER", "TABLE")
    )


def session_objects(tokens: list[Token]) -> list[str]:
    """`session_object:TEMPORARY` for CREATE [OR REPLACE] [LOCAL|GLOBAL] TEMP|TEMPORARY|VOLATILE ...: an
    object that lives in the session, where it shadows a permanent object of the same name.
    `session_object:USER_PARAMETERS` for ALTER USER|ACCOUNT ... SET|UNSET: the defaults every later session
    starts with (SEARCH_PATH decides where an unqualified name resolves, after the guard checked it)."""
    found: list[str] = []
    for statement in split_statements(expand_commands(tokens)):
        words = [t.text.upper() for t in statement]
        if words[:1] == ["ALTER"] and words[1:2] in (["USER"], ["ACCOUNT"]) and {"SET", "UNSET"} & set(words):
            found.append("session_object:USER_PARAMETERS")
        if words[:1] != ["CREATE"]:
            continue
        for word in words[1:]:
            if word not in CREATE_MODIFIERS:
                break
            if word in SESSION_SCOPED_MODIFIERS:
                found.append("session_object:TEMPORARY")
                break
    return list(dict.fromkeys(found))


_LINE_COMMENT_RE = re.compile(r"(--|//)[^\n]*")


def count_statements(sql: str) -> int:
    """Statements in ``sql`` by Snowflake's lexical rules, independently of sqlglot's tokenizer.

    Mirrors how the connector's splitter (which the snow CLI uses) reads the text: '...' strings with ''
    and backslash escapes, "..." identifiers, $$...$$ strings, -- and // line comments, non-nesting
    /* */ comments. A ';' elsewhere ends a statement; empty statements are not counted.
    """
    count, has_text, i, n = 0, False, 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch == "'" or ch == '"':
            j = i + 1
            while j < n:
                if ch == "'" and sql[j] == "\\":
                    j += 2
                    continue
                if sql[j] == ch:
                    if j + 1 < n and sql[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            i, has_text = j + 1, True
        elif sql.startswith("$$", i):
            end = sql.find("$$", i + 2)
            i, has_text = (n if end == -1 else end + 2), True
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end == -1 else end + 2
        elif sql.startswith("--", i) or sql.startswith("//", i):
            match = _LINE_COMMENT_RE.match(sql, i)
            i = match.end() if match else n
        elif ch == ";":
            count += has_text
            has_text = False
            i += 1
        else:
            has_text = has_text or not ch.isspace()
            i += 1
    return count + has_text
