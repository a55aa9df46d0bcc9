"""What a tool may do with a classified statement. One function, so every tool applies the same rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ade_platform.lib.guard.classify import Classification

Tool = Literal["execute_sql", "execute_scalar", "execute_ddl"]


@dataclass(frozen=True)
class GuardDecision:
    allowed: bool
    # SESSION_STATE_REFUSED, EXCLUDED_OBJECT, WRITE_REFUSED, MULTI_STATEMENT, NOT_SCALAR, NOT_DDL,
    # DDL_KIND_REFUSED, DDL_BODY_REFUSED
    error: str | None = None
    message: str = ""
    redact: bool = False  # DATA: pass the result through redact_result
    include_stats: bool = False
    include_names: bool = True


_DISTRUSTED_TEXT = (
    "ambiguous_comment",
    "semicolon_in_text",
    "statement_split_mismatch",
    "tokenize_error",
    "too_long",
    "too_complex",
    "pipe_operator",
)


def _has(c: Classification, code: str) -> bool:
    return any(r == code or r.startswith(code + ":") for r in c.reasons)


def decide(c: Classification, tool: Tool) -> GuardDecision:
    """execute_sql runs METADATA/SCALAR as-is and DATA redacted; execute_scalar only METADATA/SCALAR;
    execute_ddl only WRITE, and never opaque code or data egress. Reaching session state (an earlier
    statement's result, a session variable, a temporary object), exclusions and batches refuse everywhere.
    """
    if _has(c, "session_reach"):
        return GuardDecision(
            False,
            "SESSION_STATE_REFUSED",
            "statement reads an earlier statement's result or a session variable (LAST_QUERY_ID, RESULT_SCAN, "
            "DESCRIBE RESULT, $variable, ...): each call stands alone",
        )
    if _has(c, "session_object:USER_PARAMETERS"):
        return GuardDecision(
            False,
            "SESSION_STATE_REFUSED",
            "user and account parameters are the state every later session starts with (SEARCH_PATH "
            "changes where names resolve); set them outside the agent's tools",
        )
    if _has(c, "session_object"):
        return GuardDecision(
            False,
            "SESSION_STATE_REFUSED",
            "temporary objects live in the session, where they would shadow permanent objects for other "
            "callers; create a permanent object",
        )
    if c.excluded:
        return GuardDecision(
            False, "EXCLUDED_OBJECT", f"statement references excluded object(s): {', '.join(c.excluded)}"
        )
    if _has(c, "multi_statement"):
        return GuardDecision(False, "MULTI_STATEMENT", "send one statement per call")
    if tool == "execute_ddl":
        if c.classification != "WRITE":
            return GuardDecision(False, "NOT_DDL", f"statement is {c.classification}; use execute_sql")
        if any(_has(c, code) for code in _DISTRUSTED_TEXT):
            # The check could not be sure it read the statement Snowflake will run (a nested /*, a ';' the
            # splitters disagree on, text too long or deep to analyse): a write is not run on a guess.
            return GuardDecision(
                False,
                "WRITE_REFUSED",
                "the statement's text could not be analysed with certainty; simplify it",
            )
        if _has(c, "ddl_refused"):
            # The allow-list of kinds (lib/guard/_ddl.py): integrations, users, roles, grants, shares, policies...
            what = ", ".join(r.split(":", 1)[1] for r in c.reasons if r.startswith("ddl_refused:"))
            return GuardDecision(
                False, "DDL_KIND_REFUSED", f"execute_ddl does not create, alter or run this: {what}"
            )
        if _has(c, "body_refused"):
            what = ", ".join(r.split(":", 1)[1] for r in c.reasons if r.startswith("body_refused:"))
            return GuardDecision(
                False,
                "DDL_BODY_REFUSED",
                f"the body of this task, alert, procedure or function would run what execute_ddl refuses: {what}",
            )
        if _has(c, "side_effect_function") or _has(c, "unknown_table_function"):
            # A SYSTEM$ function that acts (SYSTEM$TASK_DEPENDENTS_ENABLE, SYSTEM$SEND_EMAIL) or a table
            # function that may be a procedure runs when the DDL's query runs.
            return GuardDecision(
                False, "WRITE_REFUSED", "the statement calls a function that acts or may be a procedure"
            )
        if _has(c, "opaque_code") or _has(c, "data_egress"):
            # CALL / EXECUTE IMMEDIATE hide what they touch; COPY INTO a stage or GET moves rows out.
            return GuardDecision(
                False, "WRITE_REFUSED", "procedures, scripts and data unloads are not accepted"
            )
        return GuardDecision(True, message="write allowed through execute_ddl (audited)")
    if c.classification == "WRITE":
        return GuardDecision(
            False, "WRITE_REFUSED", "statement may change state; only execute_ddl accepts writes"
        )
    if tool == "execute_scalar":
        if c.classification in ("METADATA", "SCALAR"):
            return GuardDecision(True)
        return GuardDecision(False, "NOT_SCALAR", "only metadata and counting aggregates return values")
    if c.classification == "DATA":
        return GuardDecision(True, redact=True, include_stats=c.stats_safe, include_names=c.names_safe)
    return GuardDecision(True)
