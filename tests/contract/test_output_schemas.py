"""Every tool publishes a typed output schema, so an agent knows an answer's shape before the call.

An open schema (an object with no properties) tells an agent nothing; the tools whose spec answer is a list
return it under a key, and their schema must name that key. The check reads the published surface (the same
one the snapshot pins), so it sees what an MCP host sees.
"""

from __future__ import annotations

from typing import Any, NotRequired

import pytest
from typing_extensions import TypedDict

from mcp_bridge.toolsets.schemas import schema_of
from mcp_bridge.toolsets.schemas.batch import schemas_of
from tests.contract.surface import current_surface

# Tools whose spec answer is a bare list: the key it is under here.
SPEC_LIST_KEYS = {
    "dbt_get_blast_radius": "affected",
    "dbt_get_model_tests": "tests",
    "dbt_detect_silent_skip": "patterns",
    "dbt_scan_pii_risk": "findings",
    "dbt_find_select_star": "models",
    "fs_list_models": "models",
    "fs_find_models_referencing": "references",
    "dbtcloud_list_jobs": "jobs",
    "orchestrator_detect_patterns": "results",
    "bi_list_dashboards": "dashboards",
    "bi_get_dashboard_elements": "elements",
    "bi_verify_row_counts": "elements",
}


@pytest.fixture(scope="module")
def tools() -> dict[str, Any]:
    return current_surface()["tools"]


def test_every_tool_publishes_a_typed_output_schema(tools: dict[str, Any]) -> None:
    open_ones = sorted(
        name for name, tool in tools.items() if not (tool["output_schema"] or {}).get("properties")
    )
    assert not open_ones, f"tools with an open output schema (no properties): {open_ones}"


# Toolsets whose every answer comes from a store snapshot, a given artifact, the project's files or a live run,
# and so says which (the snowfakery tools analyse the caller's recipe; the other toolsets type theirs).
ANSWERS_WITH_PROVENANCE = ("dbt_", "fs_", "warehouse_")


def test_every_answer_of_the_cached_and_live_toolsets_declares_provenance(tools: dict[str, Any]) -> None:
    checked = {name: tool for name, tool in tools.items() if name.startswith(ANSWERS_WITH_PROVENANCE)}
    assert len(checked) >= 22
    missing = [
        name for name, tool in checked.items() if "provenance" not in tool["output_schema"]["required"]
    ]
    assert not missing, f"answers without provenance in their schema: {missing}"


@pytest.mark.parametrize(("tool", "key"), sorted(SPEC_LIST_KEYS.items()))
def test_the_spec_list_key_is_in_the_schema_and_the_description(
    tools: dict[str, Any], tool: str, key: str
) -> None:
    schema = tools[tool]["output_schema"]
    field = schema["properties"][key]
    assert key in schema["required"]
    assert field["type"] == "array" and "The spec's list" in field["description"]
    item = field["items"]
    if "$ref" in item:
        item = schema["$defs"][item["$ref"].rsplit("/", 1)[-1]]
    assert item["type"] == "object" and item["properties"], f"{tool}.{key} items are untyped"
    assert f"`{key}`" in tools[tool]["description"], f"{tool}'s description does not name `{key}`"


class _Inner(TypedDict):
    name: str
    size: int | None


class _First(TypedDict):
    rows: list[_Inner]
    note: NotRequired[str]


class _Second(TypedDict):
    inner: _Inner
    flag: bool


def test_schemas_built_together_equal_those_built_one_by_one() -> None:
    together = schemas_of(_First, _Second)
    assert together[_First] == schema_of(_First)
    assert together[_Second] == schema_of(_Second)
