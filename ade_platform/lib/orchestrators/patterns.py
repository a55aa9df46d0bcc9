"""Scan log text for patterns (orchestrator_detect_patterns) and name the failure signature of a log.

Patterns come from agents, so one may be hostile: catastrophic backtracking (`(x+x+)+y`), or a program that
explodes when compiled (`(?:(?:(?:a{1000}){1000}){1000})`: 31 characters, tens of GB in a backtracking engine).
Both compiling and matching are bounded, and each pattern answers for itself (the others still answer):
- a pattern longer than MAX_PATTERN_CHARS is `pattern_too_complex`;
- RE2 (google-re2) compiles it first: its program is bounded (`max_mem`, and it refuses nested counted
  repetitions whose product exceeds 1000) and it matches in time linear in the text. A program larger than
  MAX_PROGRAM_SIZE is `pattern_too_complex`;
- only syntax RE2 lacks (backreferences, lookaround, the end-of-text escape Z, verbose mode...) falls back to the `regex` engine,
  and only after static caps measured on Python's own parse of the pattern: the product of nested counted
  repetitions (MAX_REPEAT_PRODUCT) and the size with every counted repetition expanded (MAX_EXPANDED_SIZE);
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
from typing import Any, NotRequired

from ade_platform.lib.errors import CodedError
from ade_platform.lib.shapes import OpenShape

DEFAULT_TIMEOUT_SECONDS = 1.0
MAX_MATCHES_PER_PATTERN = 200
MAX_SNIPPET_CHARS = 500
MAX_GROUP_CHARS = 200
MAX_GROUPS_LISTED = 20
MAX_ANSWER_CHARS = 250_000  # every listed string of one call together, patterns included
MAX_PATTERN_CHARS = 1_000
MAX_REPEAT_PRODUCT = 1_000  # RE2's own limit on nested counted repetitions
MAX_EXPANDED_SIZE = 20_000
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
    lines = log_text.splitlines()
    budget = _Budget(MAX_ANSWER_CHARS)
    results: list[PatternResult] = []
    for pattern in patterns:
        result = _scan(lines, pattern, timeout_seconds, budget)
        if result is not None:
            results.append(result)
    return results


def detect_signatures(
    log_text: str, *, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
) -> list[PatternResult]:
    """The built-in library of failure signatures applied to a log: each that matched, named and described."""
    lines = log_text.splitlines()
    budget = _Budget(MAX_ANSWER_CHARS)
    results: list[PatternResult] = []
    for sig in SIGNATURES:
        result = _scan(lines, sig.pattern, timeout_seconds, budget)
        if result is not None and "error" not in result:
            result["signature"] = sig.name
            result["description"] = sig.description
            results.append(result)
    return results


def failure_signature(log_text: str) -> str | None:
    """The name of the first (most specific) built-in signature found in a log, if any."""
    found = detect_signatures(log_text)
    return found[0]["signature"] if found else None


@dataclass
class _Budget:
    """Characters the answer may still list (matched text, snippets, groups, echoed patterns)."""

    left: int

    def take(self, chars: int) -> bool:
        if chars > self.left:
            self.left = 0
            return False
        self.left -= chars
        return True


class PatternRefused(CodedError):
    """A pattern neither engine may run (invalid_regex, pattern_too_complex); reported in the pattern's result."""


@dataclass
class CompiledPattern:
    """A pattern compiled by one of the two engines: "re2" (linear) or "regex" (backtracking, timed)."""

    engine: str
    compiled: Any
    groups: int
    window_bytes: int = field(default=0)


def compile_pattern(pattern: str) -> CompiledPattern:
    """RE2 when it takes the pattern; else the `regex` engine within the static caps. PatternRefused
    (invalid_regex or pattern_too_complex) otherwise."""
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
        return _compile_backtracking(pattern)  # syntax RE2 lacks
    finally:
        re2.purge()  # the module caches compiled programs (up to max_mem each): keep none of an agent's
    if compiled.programsize > MAX_PROGRAM_SIZE:
        raise PatternRefused(
            "pattern_too_complex",
            f"the pattern compiles to {compiled.programsize} instructions (at most {MAX_PROGRAM_SIZE})",
        )
    window = max(256, WORK_PER_WINDOW // max(1, compiled.programsize))
    return CompiledPattern("re2", compiled, compiled.groups, window)


def _compile_backtracking(pattern: str) -> CompiledPattern:
    import regex

    size, product = _static_size(pattern)
    if product > MAX_REPEAT_PRODUCT or size > MAX_EXPANDED_SIZE:
        raise PatternRefused(
            "pattern_too_complex",
            f"nested counted repetitions multiply to {product} (at most {MAX_REPEAT_PRODUCT}) and the expanded "
            f"pattern has {size} parts (at most {MAX_EXPANDED_SIZE})",
        )
    try:
        compiled = regex.compile(pattern, flags=regex.VERSION0)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        raise PatternRefused("invalid_regex", str(exc)[:200]) from None
    return CompiledPattern("regex", compiled, compiled.groups)


def _static_size(pattern: str) -> tuple[int, int]:
    """(size with every counted repetition expanded, largest product of nested counted repetitions), measured on
    Python's parse of the pattern; raises PatternRefused when Python does not parse it."""
    import re
    from re import _parser  # type: ignore[attr-defined]

    try:
        parsed = _parser.parse(pattern)
    except re.error as exc:
        raise PatternRefused("invalid_regex", str(exc)[:200]) from None
    except (RecursionError, OverflowError):
        raise PatternRefused("pattern_too_complex", "the pattern nests too deeply") from None
    return _measure(parsed, 0)


def _measure(items: Any, depth: int) -> tuple[int, int]:
    from re import _constants as c  # type: ignore[attr-defined]

    if depth > 200:
        raise PatternRefused("pattern_too_complex", "the pattern nests too deeply")
    size, product = 0, 1
    for op, av in items:
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, high, sub = av
            count = max(1, low if high == c.MAXREPEAT else high)  # unbounded: its minimum copies, then a loop
            inner, nested = _measure(sub, depth + 1)
            size += count * inner
            product = max(product, count * nested)
        elif op == c.SUBPATTERN:
            inner, nested = _measure(av[3], depth + 1)
            size, product = size + inner, max(product, nested)
        elif op in (c.ASSERT, c.ASSERT_NOT):
            inner, nested = _measure(av[1], depth + 1)
            size, product = size + inner, max(product, nested)
        elif op == c.ATOMIC_GROUP:
            inner, nested = _measure(av, depth + 1)
            size, product = size + inner, max(product, nested)
        elif op == c.BRANCH:
            for alternative in av[1]:
                inner, nested = _measure(alternative, depth + 1)
                size, product = size + inner, max(product, nested)
        elif op == c.GROUPREF_EXISTS:
            for alternative in av[1:]:
                if alternative is not None:
                    inner, nested = _measure(alternative, depth + 1)
                    size, product = size + inner, max(product, nested)
        elif op == c.IN:
            size += len(av)
        else:
            size += 1
    return size, product


def _scan(lines: list[str], pattern: str, timeout_seconds: float, budget: _Budget) -> PatternResult | None:
    shown = pattern[:MAX_PATTERN_CHARS]
    budget.take(len(shown))
    try:
        compiled = compile_pattern(pattern)
    except PatternRefused as exc:
        return {"pattern": shown, "match_count": 0, "error": exc.code, "detail": exc.detail}
    matches: list[PatternMatch] = []
    count = 0
    truncated = False
    deadline = time.monotonic() + timeout_seconds  # one budget per pattern, over the whole log
    try:
        for number, line, start, end, found in _matches(compiled, lines, deadline):
            count += 1
            if truncated or len(matches) >= MAX_MATCHES_PER_PATTERN:
                truncated = True
                continue
            match = _listed(compiled, number, line, start, end, found)
            if not budget.take(_chars(match)):
                truncated = True
                continue
            matches.append(match)
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
) -> Iterator[tuple[int, str, int, int, Any]]:
    """(line number, line, match start, match end, match) of every match, in order; TimeoutError past the
    deadline. RE2 matches on the line's UTF-8 bytes (offsets are byte offsets into `line.encode()`)."""
    for number, line in enumerate(lines, start=1):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        if compiled.engine == "regex":
            for found in compiled.compiled.finditer(line, timeout=remaining):
                yield number, line, found.start(), found.end(), found
            continue
        data = line.encode()
        for found in _windowed(compiled, data, deadline):
            yield number, line, found.start(), found.end(), found


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


def _listed(
    compiled: CompiledPattern, number: int, line: str, start: int, end: int, found: Any
) -> PatternMatch:
    if compiled.engine == "re2":
        data = line.encode()
        text = _text(found.group(0))
        column = len(data[:start].decode("utf-8", "replace"))
        groups = [_text(g) for g in found.groups()[:MAX_GROUPS_LISTED]]
    else:
        text = found.group(0)
        column = start
        groups = list(found.groups()[:MAX_GROUPS_LISTED])
    match: PatternMatch = {
        "line_number": number,
        "matched_text": text[:MAX_SNIPPET_CHARS],
        "line_snippet": _snippet(line, column),
    }
    if compiled.groups:
        match["capture_groups"] = [g[:MAX_GROUP_CHARS] if g is not None else None for g in groups]
    return match


def _text(value: Any) -> Any:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def _snippet(line: str, column: int) -> str:
    """The line, or a window of it around the match when it is longer than MAX_SNIPPET_CHARS."""
    if len(line) <= MAX_SNIPPET_CHARS:
        return line
    start = max(0, min(column - MAX_SNIPPET_CHARS // 5, len(line) - MAX_SNIPPET_CHARS))
    return line[start : start + MAX_SNIPPET_CHARS]


def _chars(match: PatternMatch) -> int:
    groups = match.get("capture_groups") or []
    return (
        80 + len(match["matched_text"]) + len(match["line_snippet"]) + sum(len(g or "") + 8 for g in groups)
    )
