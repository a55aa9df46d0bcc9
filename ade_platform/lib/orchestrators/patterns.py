"""Scan log text for patterns (orchestrator_detect_patterns) and name the failure signature of a log.

Patterns come from agents, so one may be hostile: catastrophic backtracking (`(x+x+)+y`), or a program that
explodes when compiled (`(?:(?:(?:a{1000}){1000}){1000})`: 31 characters, tens of GB in a backtracking engine).
Each check reads the pattern with the parser of the engine that runs it, and each pattern answers for itself
(the others still answer):
- a pattern longer than MAX_PATTERN_CHARS is `pattern_too_complex`;
- RE2 (google-re2) compiles it first, in the gateway: its program is bounded (`max_mem`, and it refuses nested
  counted repetitions whose product exceeds 1000), the size cap is RE2's own program size (MAX_PROGRAM_SIZE
  instructions), and it matches in time linear in the text;
- only syntax RE2 lacks (backreferences, lookaround, the end-of-text escape Z, verbose mode, the `regex` module's
  own syntax...) falls back to the `regex` engine, and only in a bounded child process (pattern_child.py,
  pattern_pool.py): the static caps are measured there on `regex`'s own parse, and the compile and the whole
  match run under the child's memory and CPU limits and the gateway's wall-clock deadline; a child that
  overruns is killed and its pattern is `pattern_too_complex`;
- matching has a time budget per pattern over the whole log (`regex`'s timeout; for RE2 the budget is checked
  between lines and between windows of a long line), past which the pattern is `pattern_timeout`;
- a pattern that is not a regex is `invalid_regex`.
The answer is bounded too: matched text and line snippets (MAX_SNIPPET_CHARS), capture groups (MAX_GROUP_CHARS,
MAX_GROUPS_LISTED), matches per pattern (MAX_MATCHES_PER_PATTERN) and the whole answer (MAX_ANSWER_CHARS); a
pattern whose matches are not all listed says `truncated: true` (match_count still counts them all).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NotRequired, cast

from ade_platform.lib.errors import CodedError
from ade_platform.lib.orchestrators.pattern_child import MAX_EXPANDED_SIZE, MAX_REPEAT_PRODUCT
from ade_platform.lib.orchestrators.pattern_listing import (
    MAX_ANSWER_CHARS,
    MAX_GROUP_CHARS,
    MAX_GROUPS_LISTED,
    MAX_MATCHES_PER_PATTERN,
    MAX_SNIPPET_CHARS,
    Budget,
    chars,
    listed,
)
from ade_platform.lib.orchestrators.pattern_pool import run_in_child
from ade_platform.lib.shapes import OpenShape

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_EXPANDED_SIZE",
    "MAX_GROUPS_LISTED",
    "MAX_GROUP_CHARS",
    "MAX_MATCHES_PER_PATTERN",
    "MAX_PATTERN_CHARS",
    "MAX_PROGRAM_SIZE",
    "MAX_REPEAT_PRODUCT",
    "MAX_SNIPPET_CHARS",
    "SIGNATURES",
    "PatternMatch",
    "PatternResult",
    "Signature",
    "detect_patterns",
    "detect_signatures",
    "failure_signature",
]

DEFAULT_TIMEOUT_SECONDS = 1.0
MAX_PATTERN_CHARS = 1_000
MAX_PROGRAM_SIZE = 20_000  # RE2 instructions
RE2_MAX_MEM = 8 << 20
# RE2 matches in time linear in the text, but the factor grows with the program (when its DFA gives up, the
# NFA steps every live instruction per byte): a long line is scanned in windows of about this much work, so
# the time budget is checked often enough.
WORK_PER_WINDOW = 8_000_000


class PatternMatch(OpenShape):
    line_number: int
    matched_text: str
    line_snippet: str
    capture_groups: NotRequired[list[str | None]]


class PatternResult(OpenShape):
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
    """Every pattern that matched (with its matches), plus invalid, too complex or timed-out patterns;
    no-match omitted.

    A pattern is a Python-style regex; a literal string is a regex that matches itself (an invalid one, such
    as `a(b`, is reported as invalid_regex so the agent can escape it).
    """
    found = _scan_each(log_text.splitlines(), patterns, timeout_seconds)
    return [result for result in found if result is not None]


def detect_signatures(
    log_text: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> list[PatternResult]:
    """The built-in library of failure signatures applied to a log: each that matched, named and described."""
    found = _scan_each(log_text.splitlines(), [sig.pattern for sig in SIGNATURES], timeout_seconds)
    results: list[PatternResult] = []
    for sig, result in zip(SIGNATURES, found, strict=True):
        if result is not None and "error" not in result:
            result["signature"] = sig.name
            result["description"] = sig.description
            results.append(result)
    return results


def failure_signature(log_text: str) -> str | None:
    """The name of the first (most specific) built-in signature found in a log, if any."""
    found = detect_signatures(log_text)
    return found[0]["signature"] if found else None


class PatternRefused(CodedError):
    """A pattern neither engine may run (invalid_regex, pattern_too_complex); reported in the pattern's result."""


@dataclass
class CompiledPattern:
    """A pattern RE2 compiled (linear in the text, bounded program)."""

    compiled: Any
    groups: int
    window_bytes: int = field(default=0)


def _scan_each(lines: list[str], patterns: list[str], timeout_seconds: float) -> list[PatternResult | None]:
    """Each pattern's result (None: no match), in order. RE2 patterns run here; the others all go to one bounded
    child with the log, and their answers take their turn at the answer's budget in the patterns' order."""
    compiled: list[CompiledPattern | PatternRefused | None] = []
    for pattern in patterns:
        try:
            compiled.append(_compile_re2(pattern))
        except PatternRefused as exc:
            compiled.append(exc)
    fallback = [pattern for pattern, c in zip(patterns, compiled, strict=True) if c is None]
    # The child's own budget is the whole answer's: it lists at least what the answer can take.
    answers = iter(run_in_child(lines, fallback, timeout_seconds, MAX_ANSWER_CHARS) if fallback else [])
    budget = Budget(MAX_ANSWER_CHARS)
    results: list[PatternResult | None] = []
    for pattern, c in zip(patterns, compiled, strict=True):
        shown = pattern[:MAX_PATTERN_CHARS]
        budget.take(len(shown))
        if isinstance(c, PatternRefused):
            results.append({"pattern": shown, "match_count": 0, "error": c.code, "detail": c.detail})
        elif c is None:
            results.append(_from_child(shown, next(answers), budget))
        else:
            results.append(_scan(lines, shown, c, timeout_seconds, budget))
    return results


def _compile_re2(pattern: str) -> CompiledPattern | None:
    """RE2's compiled pattern, None when RE2 lacks its syntax (it then runs in the bounded child), or
    PatternRefused (pattern_too_complex) when it is too long or RE2's program would be too large."""
    import re2

    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternRefused(
            "pattern_too_complex", f"the pattern is longer than {MAX_PATTERN_CHARS} characters"
        )
    options = re2.Options()
    options.max_mem = RE2_MAX_MEM
    options.log_errors = False
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        message = (
            exc.args[0].decode("utf-8", "replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        if "repetition size" in message or "too large" in message or "out of memory" in message:
            raise PatternRefused(
                "pattern_too_complex", f"the pattern's compiled program would be too large ({message[:120]})"
            ) from None
        return None  # syntax RE2 lacks
    except (MemoryError, RecursionError, OverflowError):
        raise PatternRefused(
            "pattern_too_complex", "the pattern's compiled program would be too large"
        ) from None
    finally:
        re2.purge()  # the module caches compiled programs (up to max_mem each): keep none of an agent's
    # The cap is RE2's own measure of what it built, so the check and the engine read the same parse.
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise PatternRefused(
            "pattern_too_complex",
            f"the pattern compiles to {compiled.programsize} instructions (at most {MAX_PROGRAM_SIZE})",
        )
    window = max(256, WORK_PER_WINDOW // max(1, compiled.programsize))
    return CompiledPattern(compiled, compiled.groups, window)


def _from_child(shown: str, answer: dict[str, Any], budget: Budget) -> PatternResult | None:
    """The bounded child's answer for one pattern, its matches listed as far as the answer's budget goes."""
    count = int(answer.get("match_count", 0))
    if "error" in answer:
        return {"pattern": shown, "match_count": count, "error": answer["error"], "detail": answer["detail"]}
    if count == 0:
        return None
    matches: list[PatternMatch] = []
    truncated = bool(answer.get("truncated"))
    for match in answer.get("matches", []):
        if not budget.take(chars(match)):
            truncated = True
            continue
        matches.append(cast(PatternMatch, match))
    result: PatternResult = {"pattern": shown, "match_count": count, "matches": matches}
    if truncated or count > len(matches):
        result["truncated"] = True
    return result


def _scan(
    lines: list[str], shown: str, compiled: CompiledPattern, timeout_seconds: float, budget: Budget
) -> PatternResult | None:
    matches: list[PatternMatch] = []
    count = 0
    truncated = False
    deadline = time.monotonic() + timeout_seconds  # one budget per pattern, over the whole log
    try:
        for number, line, start, found in _matches(compiled, lines, deadline):
            count += 1
            if truncated or len(matches) >= MAX_MATCHES_PER_PATTERN:
                truncated = True
                continue
            match = _listed(compiled, number, line, start, found)
            if not budget.take(chars(match)):
                truncated = True
                continue
            matches.append(cast(PatternMatch, match))
    except TimeoutError:
        return {
            "pattern": shown,
            "match_count": count,
            "error": "pattern_timeout",
            "detail": f"the pattern ran longer than {timeout_seconds} s and was stopped",
        }
    if count == 0:
        return None
    result: PatternResult = {"pattern": shown, "match_count": count, "matches": matches}
    if truncated or count > len(matches):
        result["truncated"] = True
    return result


def _matches(
    compiled: CompiledPattern, lines: list[str], deadline: float
) -> Iterator[tuple[int, str, int, Any]]:
    """(line number, line, match start, match) of every match, in order; TimeoutError past the deadline.
    RE2 matches on the line's UTF-8 bytes (offsets are byte offsets into `line.encode()`)."""
    for number, line in enumerate(lines, start=1):
        if deadline - time.monotonic() <= 0:
            raise TimeoutError
        data = line.encode()
        for found in _windowed(compiled, data, deadline):
            yield number, line, found.start(), found


def _windowed(compiled: CompiledPattern, data: bytes, deadline: float) -> Iterator[Any]:
    """RE2's matches in a line, a window at a time: each search sees the window and one more after it (so a
    match may run past the window's end, up to a window's length), and keeps the matches that start inside it.
    RE2 reads the whole line as context, so ^, $ and \\b mean what they mean on the whole line."""
    window = compiled.window_bytes
    if len(data) <= 2 * window:
        yield from compiled.compiled.finditer(data)
        return
    start = 0
    while start < len(data):
        if time.monotonic() >= deadline:
            raise TimeoutError
        limit = _char_start(data, min(len(data), start + window))
        next_start = limit
        for found in compiled.compiled.finditer(data, start, min(len(data), limit + window)):
            if found.start() >= limit and limit < len(data):
                break
            yield found
            next_start = max(next_start, found.end() if found.end() > found.start() else found.end() + 1)
        start = _char_start(data, next_start) if next_start > start else limit
    return


def _char_start(data: bytes, position: int) -> int:
    """The start of the UTF-8 character at position (a window never starts inside a character)."""
    while 0 < position < len(data) and (data[position] & 0xC0) == 0x80:
        position -= 1
    return position


def _listed(compiled: CompiledPattern, number: int, line: str, start: int, found: Any) -> dict[str, Any]:
    data = line.encode()
    column = len(data[:start].decode("utf-8", "replace"))
    groups = [_text(g) for g in found.groups()] if compiled.groups else None
    return listed(number, line, column, _text(found.group(0)), groups)


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
