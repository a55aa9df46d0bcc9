"""Every tool publishes a typed output schema, so an agent knows an answer's shape before the call.

An open schema (an object with no properties) tells an agent nothing; the tools whose spec answer is a list
return it under a key, and their schema must name that key. The check reads the published surface (the same
one the snapshot pins), so it sees what an MCP host sees.
"""

from __future__ import annotations

from typing import Any, NotRequired

import pytest
from pydantic import TypeAdapter
from typing_extensions import TypedDict

from mcp_bridge.toolsets.schemas import schema_of
from mcp_bridge.toolsets.schemas.batch import schemas_of
from tests.contract.surface import current_surface

# Tools still publishing an open schema while their toolset is being typed (issue 17, item 2, in progress
# elsewhere). The list only shrinks: delete a name once its tool declares its shape.
STILL_OPEN = frozenset(
    {
        "check_staleness",
        "describe_object",
        "execute_ddl",
        "execute_scalar",
        "execute_sql",
        "get_dependencies",
        "get_lineage",
        "list_objects",
        "sync_objects",
        "snowfakery.analyze_recipe",
        "snowfakery.format_recipe",
        "snowfakery.generate_mapping",
        "snowfakery.get_example",
        "snowfakery.get_schema",
        "snowfakery.list_capabilities",
        "snowfakery.list_examples",
        "snowfakery.render_diagram",
        "snowfakery.run_recipe",
        "snowfakery.search_docs",
        "snowfakery.validate_recipe",
    }
)

# Tools whose spec answer is a bare list: the key it is under here.
SPEC_LIST_KEYS = {
    "dbt_get_blast_radius": "affected",
    "dbt_get_model_tests": "tests",
    "dbt_detect_silent_skip": "patterns",
    "dbt_scan_pii_risk": "findings",
    "dbt_find_select_star": "models",
    "fs_list_models": "models",
    "fs_find_models_referencing": "references",
}


@pytest.fixture(scope="module")
def tools() -> dict[str, Any]:
    return current_surface()["tools"]


def test_every_tool_publishes_a_typed_output_schema(tools: dict[str, Any]) -> None:
    open_ones = sorted(
        name for name, tool in tools.items() if not (tool["output_schema"] or {}).get("properties")
    )
    unexpected = [name for name in open_ones if name not in STILL_OPEN]
    assert not unexpected, f"tools with an open output schema (no properties): {unexpected}"
    typed_now = sorted(STILL_OPEN & set(tools) - set(open_ones))
    assert not typed_now, f"these tools are typed now: remove them from STILL_OPEN: {typed_now}"


# Answers computed from the caller's input alone, with nothing to trace back to a system or a snapshot.
NO_PROVENANCE = frozenset({"orchestrator_detect_patterns"})


def test_every_typed_schema_names_provenance(tools: dict[str, Any]) -> None:
    missing = [
        name
        for name, tool in tools.items()
        if name not in NO_PROVENANCE
        and (tool["output_schema"] or {}).get("properties")
        and "provenance" not in tool["output_schema"]["properties"]
    ]
    assert not missing, f"typed answers without provenance in their schema: {missing}"


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
    # open to keys a later answer gains: no shape forbids additional properties
    assert "additionalProperties" not in together[_First]
    TypeAdapter(_First).validate_python({"rows": [{"name": "a", "size": None}], "extra": 1})
