"""The input schemas a host's model reads leave out string length bounds and the null of optional parameters
(mcp_bridge/schema_form.py). The bounds still hold: every tool's own pydantic model refuses an argument past
one with the structured `invalid_argument`, naming the parameter, exactly as when the bound was advertised."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from fastmcp.tools.function_tool import FunctionTool

from ade_platform.config import load_settings
from tests.contract.test_import_boundary import ALL_TOOLSETS_CONFIG
from tests.helpers import call_tool, call_tools


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> FastMCP:
    from mcp_bridge.server import build_server

    home: Path = tmp_path_factory.mktemp("advertised")
    return build_server(load_settings(ALL_TOOLSETS_CONFIG, env={"ADE_HOME": str(home)}))


def _options(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [schema, *[o for o in schema.get("anyOf", []) if isinstance(o, dict)]]


def _sample(schema: dict[str, Any]) -> Any:
    """A valid value of a simple parameter's schema (the other required arguments of a bounds case)."""
    for option in _options(schema):
        if "enum" in option:
            return option["enum"][0]
        kind = option.get("type")
        if kind == "string":
            return "x" * max(1, option.get("minLength", 1))
        if kind == "integer":
            return max(1, option.get("minimum", 1))
    return "x"


def _bound_cases(name: str, schema: dict[str, Any]) -> list[tuple[Any, str]]:
    """(argument past the bound, the words pydantic's message uses) for each length bound of a parameter."""
    cases: list[tuple[Any, str]] = []
    for option in _options(schema):
        if option.get("type") == "string" and "maxLength" in option:
            cases.append(("x" * (option["maxLength"] + 1), f"at most {option['maxLength']} character"))
        if option.get("type") == "string" and option.get("minLength", 0) >= 1:
            cases.append(("", f"at least {option['minLength']} character"))
        items = option.get("items") if option.get("type") == "array" else None
        if isinstance(items, dict) and items.get("type") == "string" and "maxLength" in items:
            cases.append((["x" * (items["maxLength"] + 1)], f"at most {items['maxLength']} character"))
    return cases


def test_length_bounds_are_not_advertised_but_every_one_is_still_enforced(gateway: FastMCP) -> None:
    tools = asyncio.run(gateway.list_tools())
    calls: list[tuple[str, dict[str, Any]]] = []
    expected: list[tuple[str, str, str]] = []
    for tool in tools:
        assert isinstance(tool, FunctionTool), tool.name
        derived = FunctionTool.from_function(tool.fn).parameters  # the schema pydantic validates against
        advertised = tool.parameters
        assert '"maxLength"' not in str(advertised).replace("'", '"'), tool.name
        required = set(derived.get("required", ()))
        for param, schema in derived.get("properties", {}).items():
            for value, words in _bound_cases(param, schema):
                others = {
                    other: _sample(derived["properties"][other]) for other in required if other != param
                }
                calls.append((tool.name, {**others, param: value}))
                expected.append((tool.name, param, words))
    assert len(calls) > 150, "the gateway's tools bound their string parameters"
    refused_otherwise = []
    for (ok, error), (tool_name, param, words) in zip(call_tools(gateway, calls), expected, strict=True):
        if (
            ok
            or error.get("error") != "invalid_argument"
            or param not in error.get("detail", "")
            or (words not in error.get("detail", ""))
        ):
            refused_otherwise.append((tool_name, param, words, ok, error))
    assert not refused_otherwise, refused_otherwise[:5]


def test_an_optional_parameter_is_advertised_without_null_and_still_takes_one(gateway: FastMCP) -> None:
    tools = {tool.name: tool for tool in asyncio.run(gateway.list_tools())}
    trace = tools["lineage_trace"].parameters["properties"]
    assert trace["depth"]["type"] == "integer" and trace["depth"]["maximum"] == 100
    assert trace["direction"]["default"] == "both", "a default that is not null stays"
    recipe = tools["snowfakery.run_recipe"].parameters["properties"]
    assert recipe["target_number"]["type"] == "object" and recipe["target_number"]["required"] == [
        "table",
        "count",
    ]
    assert recipe["options"]["additionalProperties"] == {"type": ["string", "integer", "number", "boolean"]}
    # a client that sends the null anyway is served as if it had left the parameter out
    ok, answer = call_tool(
        gateway, "snowfakery.validate_recipe", {"recipe_text": "- object: a\n", "recipe_path": None}
    )
    assert ok, answer
    ok, error = call_tool(gateway, "lineage_trace", {"start_kind": "table", "start": "orders", "depth": 0})
    assert not ok and error["error"] == "invalid_argument" and "depth" in error["detail"]
