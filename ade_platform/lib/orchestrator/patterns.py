"""Scan log text for patterns (orchestrator_detect_patterns) and name the failure signature of a log.

Patterns come from agents, so one may be catastrophic (`(x+x+)+y`). They run on the `regex` engine with a
time limit per pattern: a pattern that runs out of time is reported as `pattern_timeout`, the others still
answer. A pattern that does not compile as a regex is reported as `invalid_regex`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import NotRequired

from typing_extensions import TypedDict

from ade_platform.lib.shapes import OPEN

DEFAULT_TIMEOUT_SECONDS = 1.0
MAX_MATCHES_PER_PATTERN = 200
MAX_SNIPPET_CHARS = 500


class PatternMatch(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    line_number: int
    matched_text: str
    line_snippet: str
    capture_groups: NotRequired[list[str | None]]


class PatternResult(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    pattern: str
    match_count: int
    matches: NotRequired[list[PatternMatch]]
    truncated: NotRequired[bool]
    signature: NotRequired[str]
    description: NotRequired[str]
    error: NotRequired[str]
    detail: NotRequired[str]


@dataclass(frozen=True)
class Signature:
    name: str
    pattern: str
    description: str


# Common failure signatures, most specific first: the first that matches names a log's failure.
SIGNATURES: tuple[Signature, ...] = (
    Signature(
        "dbt_missing_column",
        r"(?i)(?:column|field)\s+\"?[\w.]+\"?\s+(?:does not exist|not found)|Binder Error: Referenced column",
        "A column a model reads does not exist (renamed or dropped upstream).",
    ),
    Signature(
        "dbt_missing_relation",
        r"(?i)(?:relation|table|view)\s+\"?[\w.\"]+\"?\s+does not exist|Catalog Error: Table with name"
        r"|Object '[\w.\"]+' does not exist",
        "A table or view a model reads does not exist.",
    ),
    Signature(
        "dbt_database_error",
        r"Database Error in (?:model|test|seed|snapshot) (\w+)",
        "dbt: the warehouse rejected a model's SQL.",
    ),
    Signature(
        "dbt_compilation_error",
        r"Compilation Error in (?:model|test|seed|snapshot|macro) (\w+)|Compilation Error",
        "dbt: a model or macro failed to compile (Jinja, ref or source).",
    ),
    Signature(
        "permission_denied",
        r"(?i)permission denied|insufficient privileges|access denied|not authorized",
        "The job's credentials lack a privilege.",
    ),
    Signature(
        "out_of_memory",
        r"(?i)out of memory|MemoryError|OOMKilled|Killed\s+process|exit code 137|SIGKILL|Negsignal\.SIGKILL",
        "The process ran out of memory or was killed.",
    ),
    Signature(
        "timeout",
        r"(?i)timed out|timeout(?:error| exceeded| expired)|deadline exceeded|execution_timeout",
        "An operation ran past its time limit.",
    ),
    Signature(
        "connection_refused",
        r"(?i)connection refused|could not connect|connection reset|name or service not known"
        r"|failed to establish a new connection",
        "A service the job needs was unreachable.",
    ),
)


def detect_patterns(
    log_text: str, patterns: list[str], *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> list[PatternResult]:
    """Every pattern that matched (with its matches), plus invalid or timed-out patterns; no-match omitted.

    A pattern is a Python-style regex; a literal string is a regex that matches itself (an invalid one, such
    as `a(b`, is reported as invalid_regex so the agent can escape it).
    """
    lines = log_text.splitlines()
    results: list[PatternResult] = []
    for pattern in patterns:
        result = _scan(lines, pattern, timeout_seconds)
        if result is not None:
            results.append(result)
    return results


def detect_signatures(
    log_text: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> list[PatternResult]:
    """The built-in library of failure signatures applied to a log: each that matched, named and described."""
    lines = log_text.splitlines()
    results: list[PatternResult] = []
    for sig in SIGNATURES:
        result = _scan(lines, sig.pattern, timeout_seconds)
        if result is not None and "error" not in result:
            result["signature"] = sig.name
            result["description"] = sig.description
            results.append(result)
    return results


def failure_signature(log_text: str) -> str | None:
    """The name of the first (most specific) built-in signature found in a log, if any."""
    found = detect_signatures(log_text)
    return found[0]["signature"] if found else None


def _scan(lines: list[str], pattern: str, timeout_seconds: float) -> PatternResult | None:
    import regex  # on first use: the orchestrator toolset imports this module at gateway start

    try:
        compiled = regex.compile(pattern, flags=regex.VERSION0)
    except (regex.error, OverflowError, RecursionError) as exc:
        return {"pattern": pattern, "match_count": 0, "error": "invalid_regex", "detail": str(exc)[:200]}
    matches: list[PatternMatch] = []
    count = 0
    deadline = time.monotonic() + timeout_seconds  # one budget per pattern, over the whole log
    try:
        for number, line in enumerate(lines, start=1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            for found in compiled.finditer(line, timeout=remaining):
                count += 1
                if len(matches) < MAX_MATCHES_PER_PATTERN:
                    match: PatternMatch = {
                        "line_number": number,
                        "matched_text": found.group(0)[:MAX_SNIPPET_CHARS],
                        "line_snippet": line[:MAX_SNIPPET_CHARS],
                    }
                    if compiled.groups:
                        match["capture_groups"] = list(found.groups())
                    matches.append(match)
    except TimeoutError:
        return {
            "pattern": pattern,
            "match_count": count,
            "error": "pattern_timeout",
            "detail": f"the pattern ran longer than {timeout_seconds} s and was stopped",
        }
    if count == 0:
        return None
    result: PatternResult = {"pattern": pattern, "match_count": count, "matches": matches}
    if count > len(matches):
        result["truncated"] = True
    return result
