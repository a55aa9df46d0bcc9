"""What execute_ddl may create, alter or drop: an allow-list of object kinds, and bodies judged as statements.

A deny-list of dangerous DDL grows with every Snowflake release (a new integration type, a new way to
unload); an allow-list fails closed. The kinds an agent needs to shape a warehouse are on it; everything
else - stages with a URL or credentials, integrations of any kind, users, roles, grants, shares, network
policies and rules, secrets, masking / row access / other policies and their attachments, accounts,
warehouses, pipes, external functions, external or Iceberg tables, replication - is `ddl_refused:<what>`.

Tasks, alerts, procedures and functions are on the list only because their bodies are checked: each body
(plain after AS, a quoted string, or $$...$$; an alert's condition and action) is split into the statements
that will run (`_bodies.py`) and each is classified with the full top-level rules, recursively, by the
classifier the caller passes in. Inside a body: no EXECUTE IMMEDIATE, CALL, EXECUTE TASK, data egress,
session state, side-effect SYSTEM$ functions or unknown table functions; only LANGUAGE SQL. The objects
the bodies name join the statement's objects, so exclusions hold for them. Findings are
`body_refused:<what>`.

Resuming or running a task or alert (`ALTER TASK|ALERT ... RESUME`, `EXECUTE TASK|ALERT`) runs a body that
this check may never have seen (created by someone else, or before this check existed): refused unless the
policy's `allow_task_execution` is on.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlglot.tokens import Token, TokenType

from ade_platform.lib.guard import _bodies as bd
from ade_platform.lib.guard import _tokens as tk
from ade_platform.lib.guard._bodies import Piece
from ade_platform.lib.guard._catalog import METADATA_FUNCTIONS, READ_VERBS, WRITE_WORDS
from ade_platform.lib.guard._refs import ObjectRef
from ade_platform.lib.guard._verdict import Verdict
from ade_platform.lib.guard.policy import GuardPolicy

TextClassifier = Callable[[str, GuardPolicy], Verdict]

DDL_VERBS = frozenset({"CREATE", "ALTER", "DROP", "UNDROP", "COMMENT"})
# Kinds (as written, modifiers included) an agent may CREATE / ALTER / DROP / UNDROP through execute_ddl.
ALLOWED_KINDS: dict[str, str] = {
    "TABLE": "TABLE",
    "TRANSIENT TABLE": "TABLE",
    "HYBRID TABLE": "TABLE",
    "DYNAMIC TABLE": "DYNAMIC_TABLE",
    "TRANSIENT DYNAMIC TABLE": "DYNAMIC_TABLE",
    "VIEW": "VIEW",
    "SECURE VIEW": "VIEW",
    "RECURSIVE VIEW": "VIEW",
    "SECURE RECURSIVE VIEW": "VIEW",
    "MATERIALIZED VIEW": "MATERIALIZED_VIEW",
    "SECURE MATERIALIZED VIEW": "MATERIALIZED_VIEW",
    "SCHEMA": "SCHEMA",
    "TRANSIENT SCHEMA": "SCHEMA",
    "DATABASE": "DATABASE",
    "TRANSIENT DATABASE": "DATABASE",
    "SEQUENCE": "SEQUENCE",
    "FILE FORMAT": "FILE_FORMAT",
    "TAG": "TAG",
    "STREAM": "STREAM",
    "STAGE": "STAGE",  # internal only: no URL, credentials or storage integration
    "TASK": "TASK",  # body checked
    "ALERT": "ALERT",  # condition and action checked
    "PROCEDURE": "PROCEDURE",  # LANGUAGE SQL, body checked
    "FUNCTION": "FUNCTION",  # LANGUAGE SQL, body checked
    "SECURE FUNCTION": "FUNCTION",
}
# Named in refusals (anything else not allowed is refused too, by its first word).
REFUSED_KINDS = frozenset(
    {
        "INTEGRATION",
        "STORAGE INTEGRATION",
        "API INTEGRATION",
        "NOTIFICATION INTEGRATION",
        "SECURITY INTEGRATION",
        "EXTERNAL ACCESS INTEGRATION",
        "CATALOG INTEGRATION",
        "USER",
        "ROLE",
        "DATABASE ROLE",
        "APPLICATION ROLE",
        "SHARE",
        "NETWORK POLICY",
        "NETWORK RULE",
        "SECRET",
        "MASKING POLICY",
        "ROW ACCESS POLICY",
        "AGGREGATION POLICY",
        "PROJECTION POLICY",
        "JOIN POLICY",
        "PASSWORD POLICY",
        "SESSION POLICY",
        "AUTHENTICATION POLICY",
        "PACKAGES POLICY",
        "ACCOUNT",
        "WAREHOUSE",
        "RESOURCE MONITOR",
        "EXTERNAL FUNCTION",
        "SECURE EXTERNAL FUNCTION",
        "PIPE",
        "EXTERNAL VOLUME",
        "CONNECTION",
        "REPLICATION GROUP",
        "FAILOVER GROUP",
        "EXTERNAL TABLE",
        "ICEBERG TABLE",
        "EVENT TABLE",
        "APPLICATION",
        "APPLICATION PACKAGE",
        "STREAMLIT",
        "NOTEBOOK",
        "COMPUTE POOL",
        "SERVICE",
        "IMAGE REPOSITORY",
        "GIT REPOSITORY",
        "MODEL",
        "SNAPSHOT",
        "DATA METRIC FUNCTION",
    }
)
_LONGEST_KIND = max(len(k.split()) for k in (*ALLOWED_KINDS, *REFUSED_KINDS))
_SKIPPED = frozenset(
    {"OR", "REPLACE", "IF", "NOT", "EXISTS", "TEMP", "TEMPORARY", "VOLATILE", "LOCAL", "GLOBAL"}
)
# `KEY = ...` options that point outside the account or at code and credentials it cannot see.
_LOCATION_KEYS = frozenset({"URL", "CREDENTIALS", "SECRETS", "ENCRYPTION_KEY"})
_CODE_LANGUAGES = frozenset({"SQL"})
_BODY_VERBS = frozenset(
    {"SELECT", "WITH", "(", "VALUES", "SHOW", "DESC", "DESCRIBE", "LIST", "LS", "INSERT", "UPDATE", "DELETE"}
    | {"MERGE", "TRUNCATE", "COPY", "COMMIT", "ROLLBACK", *DDL_VERBS}
)
# A body statement's reasons that refuse the whole DDL (session_reach/session_object stay as they are:
# decide() refuses those everywhere with SESSION_STATE_REFUSED).
_BODY_REFUSING = (
    "opaque_code",
    "data_egress",
    "session_state",
    "side_effect_function",
    "unknown_table_function",
    "multi_statement",
    "ddl_refused",
    "task_run",
)
_UNANALYSABLE = frozenset(
    {"too_long", "tokenize_error", "parse_error", "statement_split_mismatch", "too_complex"}
    | {"semicolon_in_text", "pipe_operator", "ambiguous_comment", "empty_statement"}
)
# Words that, in a body sqlglot could not parse, mean something runs that the check did not see.
_FORBIDDEN_IN_UNPARSED = frozenset(
    {"COPY", "EXECUTE", "EXEC", "CALL", "GET", "PUT", "GRANT", "REVOKE", "USE", "SET", "UNSET", "UNLOAD"}
)
# ALTER ... {SET|UNSET|ADD|DROP} <these> POLICY: attaching or removing a governance policy.
_POLICY_KINDS = frozenset({"MASKING", "ACCESS", "AGGREGATION", "PROJECTION", "JOIN", "LIFECYCLE", "PRIVACY"})
# First words that make a text a statement rather than an expression.
STATEMENT_WORDS = frozenset(WRITE_WORDS | READ_VERBS | {"EXEC", "EXECUTE", "CALL", "GRANT", "REVOKE"}) - {"("}
MAX_BODY_DEPTH = 4
_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("ade_guard_body_depth", default=0)


@dataclass
class Review:
    reasons: list[str] = field(default_factory=list)
    refs: list[ObjectRef] = field(default_factory=list)
    opaque_source: bool = False
    embeds_query: bool = False
    task_run: bool = False  # EXECUTE TASK|ALERT allowed by the policy (the opaque_code reason is lifted)


def review(toks: list[Token], sql: str, policy: GuardPolicy, classify_text: TextClassifier) -> Review | None:
    """The allow-list and body checks of one statement's tokens; None when it is not DDL at all."""
    words = [bd.word(t) for t in toks]
    verb = words[0] if words else ""
    out = Review()
    if verb in ("GRANT", "REVOKE"):
        out.reasons.append(f"ddl_refused:{verb}")  # privileges are the operator's, not the agent's
        return out
    if verb in ("EXECUTE", "EXEC"):
        # sqlglot keeps the rest of EXECUTE ... as one string token: read it as the words it is.
        words = [bd.word(t) for t in tk.expand_commands(toks)]
        if len(words) > 1 and words[1] in ("TASK", "ALERT"):
            _task_run(out, f"EXECUTE_{words[1]}", policy)
            return out
        return None
    if verb not in DDL_VERBS:
        return None
    if verb == "ALTER" and len(words) > 1 and words[1] == "SESSION":
        return None  # session state: refused as NOT_DDL by the tool, as before
    if verb == "COMMENT":
        return out  # COMMENT [IF EXISTS] ON <kind> <name> IS '...': a comment on anything is harmless
    phrase, at = _kind(words)
    kind = ALLOWED_KINDS.get(phrase)
    if kind is None:
        out.reasons.append(f"ddl_refused:{(phrase or ' '.join(words[1:3])).replace(' ', '_') or verb}")
        return out
    header_end = _clauses(out, verb, kind, toks, words, at, policy)
    if verb == "CREATE" or (verb == "ALTER" and kind in ("TASK", "ALERT")):
        _bodies(out, verb, kind, toks, words, sql, header_end, policy, classify_text)
    return out


def _kind(words: list[str]) -> tuple[str, int]:
    """The object kind as written after the verb (modifiers included) and the index after it."""
    i = 1
    while i < len(words) and words[i] in _SKIPPED:
        i += 1
    if words[:1] == ["CREATE"] and words[i : i + 1] == ["ALTER"]:
        i += 1  # CREATE OR ALTER
    # The longest phrase wins (DATABASE ROLE is not DATABASE); a refused one names what was refused.
    for n in range(_LONGEST_KIND, 0, -1):
        phrase = " ".join(words[i : i + n])
        if phrase in ALLOWED_KINDS or phrase in REFUSED_KINDS:
            return phrase, i + n
    return (words[i] if i < len(words) else ""), i + 1


def _clauses(
    out: Review, verb: str, kind: str, toks: list[Token], words: list[str], at: int, policy: GuardPolicy
) -> int:
    """Options of an allowed kind that still leave the account or loosen a policy. Returns where the
    header ends (the body's AS / THEN / MODIFY AS), so a body's words are judged as a body."""
    header_end = _header_end(kind, verb, toks, words, at)
    top = bd.depth0(toks[:header_end])
    for j, (i, _tok) in enumerate(top):
        w = words[i]
        nxt = top[j + 1][1] if j + 1 < len(top) else None
        is_key = nxt is not None and nxt.token_type == TokenType.EQ
        if is_key and (w in _LOCATION_KEYS or w.endswith(("_INTEGRATION", "_INTEGRATIONS"))):
            out.reasons.append(
                f"ddl_refused:{'INTEGRATION' if 'INTEGRATION' in w else 'EXTERNAL_LOCATION'}:{w}"
            )
        prev = words[top[j - 1][0]] if j else ""
        if verb == "ALTER" and w in ("REPLICATION", "FAILOVER") and prev == "ENABLE":
            out.reasons.append("ddl_refused:REPLICATION")  # ENABLE REPLICATION|FAILOVER TO ACCOUNTS
        if verb == "ALTER" and w in ("POLICY", "POLICIES") and prev in _POLICY_KINDS:
            # SET/UNSET/DROP of masking, row access, aggregation, projection policies: governance, not DDL.
            out.reasons.append("ddl_refused:POLICY_CHANGE")
        if verb == "ALTER" and w == "UNSET" and nxt is not None and bd.word(nxt) == "TAG":
            out.reasons.append("ddl_refused:TAG_UNSET")  # tag-based masking rides on the tag
        if verb == "ALTER" and kind in ("TASK", "ALERT") and w == "RESUME":
            _task_run(out, f"{kind}_RESUME", policy)
    if kind == "TAG" and (verb == "DROP" or (verb == "CREATE" and "REPLACE" in words[1:3])):
        out.reasons.append("ddl_refused:TAG_DROP")  # a dropped tag takes its masking policies with it
    out.reasons[:] = list(dict.fromkeys(out.reasons))
    return header_end


def _task_run(out: Review, what: str, policy: GuardPolicy) -> None:
    if policy.allow_task_execution:
        out.task_run = True
        out.reasons.append(f"task_run:{what}")
    else:
        out.reasons.append(f"ddl_refused:{what}")


def _header_end(kind: str, verb: str, toks: list[Token], words: list[str], at: int) -> int:
    top = bd.depth0(toks, at)
    if kind in ("TASK", "PROCEDURE", "FUNCTION") and verb == "CREATE":
        for j, (i, _) in enumerate(top):
            if words[i] == "AS" and (j == 0 or words[top[j - 1][0]] != "EXECUTE"):
                return i
    if kind == "TASK" and verb == "ALTER":
        for i, _ in top:
            if words[i] == "MODIFY":
                return i
    if kind == "ALERT":
        for i, _ in top:
            opens = i + 1 < len(toks) and toks[i + 1].token_type == TokenType.L_PAREN
            if words[i] == "MODIFY" or (words[i] == "IF" and opens):
                return i
    return len(toks)


def _bodies(
    out: Review,
    verb: str,
    kind: str,
    toks: list[Token],
    words: list[str],
    sql: str,
    header_end: int,
    policy: GuardPolicy,
    classify_text: TextClassifier,
) -> None:
    if kind not in ("TASK", "ALERT", "PROCEDURE", "FUNCTION"):
        return
    pieces: list[Piece] = []
    refused: list[str] = []
    if kind in ("PROCEDURE", "FUNCTION"):
        top = bd.depth0(toks[:header_end])
        langs = [words[i + 1] for i, _ in top if words[i] == "LANGUAGE" and i + 1 < header_end]
        bad = [lang for lang in langs if lang not in _CODE_LANGUAGES]
        if bad:
            out.reasons.append(f"body_refused:language:{bad[0]}")
            return
        if header_end >= len(toks) - 1:
            out.reasons.append("body_refused:no_body")  # a handler or imports: code this check cannot see
            return
        body = bd.span(sql, toks, header_end + 1)
        if kind == "FUNCTION":
            pieces.append(Piece("expression", body))  # _judge reads a body that is a statement as one
        else:
            script = bd.split_script(body)
            pieces, refused = script.pieces, script.refused
    elif kind == "TASK":
        _task_parts(toks, words, sql, header_end, pieces, refused, create=verb == "CREATE")
    else:
        _alert_parts(toks, words, sql, header_end, pieces, refused)
    out.reasons.extend(refused)
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        if _DEPTH.get() > MAX_BODY_DEPTH:
            out.reasons.append("body_refused:too_deep")
            return
        for piece in pieces:
            _judge(out, piece, policy, classify_text)
    finally:
        _DEPTH.reset(token)
    out.reasons[:] = list(dict.fromkeys(out.reasons))


def _task_parts(
    toks: list[Token],
    words: list[str],
    sql: str,
    header_end: int,
    pieces: list[Piece],
    refused: list[str],
    *,
    create: bool,
) -> None:
    top = bd.depth0(toks[:header_end])
    if create:
        if header_end >= len(toks):
            if "CLONE" in words:
                refused.append("body_refused:unchecked_clone")  # the source task's body was never checked
            return
        when = [i for i, _ in top if words[i] == "WHEN"]
        if when:
            pieces.append(Piece("expression", bd.span(sql, toks, when[0] + 1, header_end)))
        _script(bd.span(sql, toks, header_end + 1), pieces, refused)
        return
    if header_end >= len(toks):
        return  # ALTER TASK ... SET / SUSPEND / RESUME (RESUME judged in _clauses)
    after = words[header_end + 1] if header_end + 1 < len(words) else ""
    if after == "AS":
        _script(bd.span(sql, toks, header_end + 2), pieces, refused)
    elif after == "WHEN":
        pieces.append(Piece("expression", bd.span(sql, toks, header_end + 2)))


def _alert_parts(
    toks: list[Token], words: list[str], sql: str, header_end: int, pieces: list[Piece], refused: list[str]
) -> None:
    if header_end >= len(toks):
        return
    i = header_end
    if words[i] == "MODIFY":
        i += 1
        if i < len(words) and words[i] == "ACTION":
            _script(bd.span(sql, toks, i + 1), pieces, refused)
            return
        if i < len(words) and words[i] == "CONDITION":
            pieces.append(Piece("expression", bd.span(sql, toks, i + 1)))
        return
    # IF ( EXISTS ( <query> ) ) THEN <action>
    if i + 1 >= len(toks) or toks[i + 1].token_type != TokenType.L_PAREN:
        refused.append("body_refused:construct:ALERT_CONDITION")
        return
    end = bd.closing(toks, i + 1)
    pieces.append(Piece("expression", bd.span(sql, toks, i + 2, end)))
    if end + 1 >= len(toks) or words[end + 1] != "THEN":
        refused.append("body_refused:construct:ALERT_ACTION")
        return
    _script(bd.span(sql, toks, end + 2), pieces, refused)


def _script(text: str, pieces: list[Piece], refused: list[str]) -> None:
    if not text.strip():
        refused.append("body_refused:no_body")
        return
    script = bd.split_script(text)
    pieces.extend(script.pieces)
    refused.extend(script.refused)


def _judge(out: Review, piece: Piece, policy: GuardPolicy, classify_text: TextClassifier) -> None:
    """One piece of a body, classified with the full top-level rules (and this review, recursively)."""
    text = piece.text.strip().rstrip(";")
    if not text:
        return
    first = bd.tokenize_words(text)
    if first is None:
        out.reasons.append("body_refused:tokenize_error")
        return
    # An expression is judged as `SELECT <expression>`, unless it is written as a statement (a function whose
    # body is `COPY INTO ...`): then it is judged as the statement it is.
    as_statement = piece.role != "expression" or (first[:1] and first[0] in STATEMENT_WORDS)
    sql = text if as_statement else f"SELECT {text}"
    words = first if as_statement else ["SELECT", *first]
    verb = words[0] if words else ""
    verdict = classify_text(sql, policy)
    out.refs.extend(verdict.refs)
    out.opaque_source = out.opaque_source or verdict.opaque_source
    if verb not in _BODY_VERBS:
        out.reasons.append(f"body_refused:statement:{verb}")
    if piece.role == "query" and verdict.cls == "WRITE":
        out.reasons.append("body_refused:query_writes")
    for reason in verdict.reasons:
        head = reason.split(":", 1)[0]
        if head in ("session_reach", "session_object", "body_refused"):
            out.reasons.append(reason)
        elif head in _BODY_REFUSING:
            out.reasons.append(f"body_refused:{reason}")
        elif head in _UNANALYSABLE:
            unseen = [w for w in words if w in _FORBIDDEN_IN_UNPARSED or _side_effect(w)]
            if head != "parse_error" or verb in DDL_VERBS or verb == "COPY" or unseen:
                out.reasons.append(f"body_refused:unanalysable:{head}{':' + unseen[0] if unseen else ''}")
    reads = verb in ("SELECT", "WITH", "(", "VALUES") and any(not r.metadata for r in verdict.refs)
    if reads or "write_embeds_query" in verdict.reasons:
        out.embeds_query = True


def _side_effect(word: str) -> bool:
    return word.startswith("SYSTEM$") and word not in METADATA_FUNCTIONS
