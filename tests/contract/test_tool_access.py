"""Every tool is classified by its effect once (mcp_bridge/access.py), so a role can allow it (issue 28 §2).

A new tool that changes something must be added to `CHANGES` (trigger / ddl / workspace); any other tool must be
annotated read-only. An unclassified tool is allowed to no signed-in caller; this test names it instead.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp.types import ToolAnnotations

from ade_platform.config import load_settings
from mcp_bridge.access import CHANGES, classify
from mcp_bridge.server import build_server
from tests.conftest import REPO_ROOT
from tests.helpers import list_tools


@pytest.fixture(scope="module")
def tools() -> dict[str, Any]:
    # every toolset on (as the published surface): a home that does not exist, nothing materialized
    settings = load_settings(REPO_ROOT / "ade.yaml", env={"ADE_HOME": "/nonexistent/ade-home"})
    return {tool.name: tool for tool in list_tools(build_server(settings))}


def test_every_tool_has_an_effect(tools: dict[str, Any]) -> None:
    unclassified = sorted(
        name for name, tool in tools.items() if classify(name, tool.annotations).effect is None
    )
    assert not unclassified, (
        f"{unclassified}: add each to mcp_bridge.access.CHANGES with what it changes (trigger, ddl, workspace), "
        "or annotate it readOnlyHint=True if it only reads"
    )


def test_the_changes_table_names_real_tools_that_do_not_claim_to_read(tools: dict[str, Any]) -> None:
    assert set(CHANGES) <= set(tools), set(CHANGES) - set(tools)
    for name in CHANGES:
        annotations = tools[name].annotations
        assert annotations is not None and annotations.read_only_hint is not True, name
        assert classify(name, annotations).live, name  # every change counts against the per-caller limits
    effects = {name: classify(name, tools[name].annotations).effect for name in tools}
    assert {e for n, e in effects.items() if n not in CHANGES} == {"read"}


def test_classification_rules() -> None:
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)
    open_world = ToolAnnotations(readOnlyHint=True, openWorldHint=True)
    writes = ToolAnnotations(readOnlyHint=False, destructiveHint=True)
    assert classify("dbt_get_lineage", read_only) == classify("x", read_only)
    assert (classify("x", read_only).effect, classify("x", read_only).live) == ("read", False)
    assert (classify("x", open_world).effect, classify("x", open_world).live) == ("read", True)
    # a new tool that does not say it only reads is unclassified, whatever else it says
    assert classify("new_tool", writes).effect is None and classify("new_tool", None).effect is None
    # the table wins over an annotation, and portable names (dots as underscores) match
    assert classify("execute_ddl", read_only).effect == "ddl"
    assert classify("snowfakery_run_recipe", writes).effect == "workspace"
