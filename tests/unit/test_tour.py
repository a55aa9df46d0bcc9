"""The README's tour table is the one docs/tour.json renders (the calls the slow demo test makes), and it has one
call per toolset of the demo's configuration."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import settings_for
from tests.integration.tour import README, tour_calls, tour_table


def test_the_readme_tour_is_docs_tour_json() -> None:
    table = tour_table()
    assert table in README.read_text(encoding="utf-8"), f"README's tour table should read:\n{table}"


def test_the_tour_calls_one_tool_of_every_toolset_of_the_demo(tmp_path: Path) -> None:
    toolsets = [c["toolset"] for c in tour_calls()]
    assert sorted(toolsets) == sorted(settings_for(tmp_path).mcp.toolsets)
