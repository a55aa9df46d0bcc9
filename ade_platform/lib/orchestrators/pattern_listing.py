"""How a pattern's matches are listed, shared by the gateway (RE2 patterns) and the bounded child that runs the
`regex` fallback (ade_platform/lib/orchestrators/pattern_child.py), so both answer in the same shape and within
the same caps. Standard library only: the child imports it and nothing heavier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_MATCHES_PER_PATTERN = 200
MAX_SNIPPET_CHARS = 500
MAX_GROUP_CHARS = 200
MAX_GROUPS_LISTED = 20
MAX_ANSWER_CHARS = 250_000  # every listed string of one call together, patterns included


@dataclass
class Budget:
    """Characters the answer may still list (matched text, snippets, groups, echoed patterns)."""

    left: int

    def take(self, chars: int) -> bool:
        if chars > self.left:
            self.left = 0
            return False
        self.left -= chars
        return True


def listed(number: int, line: str, column: int, text: str, groups: list[str | None] | None) -> dict[str, Any]:
    """One match as the answer lists it; `groups` is None when the pattern has no capture group."""
    match: dict[str, Any] = {
        "line_number": number,
        "matched_text": text[:MAX_SNIPPET_CHARS],
        "line_snippet": snippet(line, column),
    }
    if groups is not None:
        match["capture_groups"] = [
            g[:MAX_GROUP_CHARS] if g is not None else None for g in groups[:MAX_GROUPS_LISTED]
        ]
    return match


def snippet(line: str, column: int) -> str:
    """The line, or a window of it around the match when it is longer than MAX_SNIPPET_CHARS."""
    if len(line) <= MAX_SNIPPET_CHARS:
        return line
    start = max(0, min(column - MAX_SNIPPET_CHARS // 5, len(line) - MAX_SNIPPET_CHARS))
    return line[start : start + MAX_SNIPPET_CHARS]


def chars(match: dict[str, Any]) -> int:
    """What a listed match costs the answer's budget."""
    groups = match.get("capture_groups") or []
    return (
        80 + len(match["matched_text"]) + len(match["line_snippet"]) + sum(len(g or "") + 8 for g in groups)
    )
