"""The README's tour (one call per toolset against `make demo`), read from docs/tour.json: the README's table is
rendered from it (`tour_table`) and the slow demo test makes every call it lists."""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import REPO_ROOT

TOUR = REPO_ROOT / "docs" / "tour.json"
README = REPO_ROOT / "README.md"


def tour_calls() -> list[dict[str, Any]]:
    return json.loads(TOUR.read_text(encoding="utf-8"))["calls"]


def call_text(call: dict[str, Any]) -> str:
    """A call as a host's tool-call payload: what a reader copies into an MCP host (or the MCP Inspector)."""
    return json.dumps({"name": call["tool"], "arguments": call["arguments"]}, separators=(", ", ": "))


def tour_table() -> str:
    """The README's tour table, as docs/tour.json says it."""
    rows = ["| toolset | call | what the answer shows |", "|---|---|---|"]
    rows += [f"| `{c['toolset']}` | `{call_text(c)}` | {c['shows']} |" for c in tour_calls()]
    return "\n".join(rows)
