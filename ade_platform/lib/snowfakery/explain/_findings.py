"""What an explanation rule reads and returns: the recipe's declared names, a finding, and the line lookups every
rule uses to point at the failing construct and write its fixed line."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

# How far below the reported line a construct is looked for: Snowfakery reports a field's line, and the
# failing value (a `fake:` block, a function's arguments) can sit a few lines under it.
_LOOKAHEAD = 8
# The keys that say what a recipe statement is (its first key).
STATEMENT_KEYS = (
    "object",
    "table",
    "var",
    "option",
    "macro",
    "include_file",
    "plugin",
    "snowfakery_version",
)


@dataclass(frozen=True)
class RecipeFacts:
    """Names a recipe declares, for "did you mean" suggestions, and the schema's statement keys."""

    tables: Sequence[str] = ()
    nicknames: Sequence[str] = ()
    options: Sequence[str] = ()
    fields: Sequence[str] = ()
    variables: Sequence[str] = ()
    statement_properties: dict[str, Sequence[str]] = field(default_factory=dict)
    plugins: Sequence[str] = ()


@dataclass
class Finding:
    construct: str | None
    rule: str
    description: str
    line: int | None = None
    before: str | None = None
    after: str | None = None


def rename(
    construct: str,
    rule: str,
    bad: str,
    good: str | None,
    lines: list[str],
    line: int | None,
    what: str,
    *,
    otherwise: str | None = None,
) -> Finding:
    """Replace `bad` by `good` on the first line at or below `line` that has it; with no `good`, the advice
    `otherwise` (by default: replace it with `what`)."""
    if not good:
        return Finding(construct, rule, otherwise or f"replace {bad!r} with {what}")
    word = re.compile(rf"(?<!\w){re.escape(bad)}(?!\w)")
    number, text = find_line(lines, line, word)
    if text is None:
        return Finding(construct, rule, f"replace {bad!r} with {good!r}")
    after = word.sub(good, text, count=1)
    return Finding(construct, rule, f"replace {bad!r} with {good!r}", number, text, after)


def find_line(
    lines: list[str], line: int | None, pattern: re.Pattern[str], *, back: bool = False
) -> tuple[int | None, str | None]:
    """The first line at or below `line` (within the look-ahead; with back=True also just above) that
    matches: (1-based number, text)."""
    if not lines:
        return None, None
    start = line or 1
    order = list(range(start, min(start + _LOOKAHEAD, len(lines)) + 1))
    if back:
        order += list(range(start - 1, max(start - _LOOKAHEAD, 1) - 1, -1))
    if line is None:
        order = list(range(1, len(lines) + 1))
    for number in order:
        if 1 <= number <= len(lines) and pattern.search(lines[number - 1]):
            return number, lines[number - 1]
    return None, None


def line_text(lines: list[str], line: int | None) -> str | None:
    if line is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]


def closest(name: str, candidates: list[str], cutoff: float = 0.6) -> str | None:
    if not candidates:
        return None
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered and lowered[name.lower()] != name:
        return lowered[name.lower()]
    match = difflib.get_close_matches(name, candidates, n=1, cutoff=cutoff)
    return match[0] if match else None


def statement_kind(lines: list[str], line: int | None) -> str:
    """Which statement a line belongs to: the nearest `- <key>:` at or above it."""
    for number in range(min(line or 0, len(lines)), 0, -1):
        stripped = lines[number - 1].strip()
        if stripped.startswith("- "):
            key = stripped[2:].split(":", 1)[0].strip()
            if key in STATEMENT_KEYS:
                return "object" if key == "table" else key
    return "object"
