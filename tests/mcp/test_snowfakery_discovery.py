"""The snowfakery toolset's discovery catalogues and instructions, through the MCP protocol."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from mcp_bridge.server import build_server
from tests.helpers import call_tool
from tests.mcp.test_snowfakery_tools import snowfakery_settings

CATALOGUES = {
    "providers": "snowfakery://providers/list",
    "plugins": "snowfakery://plugins/list",
    "formats": "snowfakery://formats/info",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> FastMCP:
    return build_server(snowfakery_settings(tmp_path_factory.mktemp("discovery")), only="snowfakery")


def _read_json(server: FastMCP, uri: str) -> tuple[Any, int]:
    async def go() -> str:
        async with Client(server) as client:
            contents = await client.read_resource(uri)
        return contents[0].text

    text = asyncio.run(go())
    return json.loads(text), len(text.encode())


def test_catalogues_are_resources_linked_from_capabilities(server: FastMCP) -> None:
    async def listed() -> dict[str, Any]:
        async with Client(server) as client:
            return {str(r.uri): r for r in await client.list_resources()}

    resources = asyncio.run(listed())
    assert set(CATALOGUES.values()) <= set(resources)
    assert all(resources[uri].mime_type == "application/json" for uri in CATALOGUES.values())
    ok, caps = call_tool(server, "snowfakery.list_capabilities")
    assert ok and caps["discovery"] == CATALOGUES


def test_faker_providers_have_the_fake_spelling_and_an_example(server: FastMCP) -> None:
    catalogue, size = _read_json(server, CATALOGUES["providers"])
    assert size < 100_000  # bounded: one resource read, not a dump of Faker
    methods = {m["name"]: m for p in catalogue["providers"] for m in p["methods"]}
    assert catalogue["count"] == len(methods) > 150
    assert methods["first_name"]["fake"] == "fake: first_name" and methods["first_name"]["example"]
    assert "@" in methods["email"]["example"]
    assert methods["binary"]["example"] is None  # large outputs are listed, never generated
    assert all(m["example"] is None or len(m["example"]) <= 80 for m in methods.values())
    # the names Snowfakery adds to Faker (Salesforce-style), read from its source
    added = {n["name"] for n in catalogue["snowfakery_names"]}
    assert {"user_name", "alias", "email"} <= added
    assert "fake:" in catalogue["usage"]


def test_plugins_are_the_allow_listed_ones_with_their_functions(tmp_path: Path) -> None:
    default = build_server(snowfakery_settings(tmp_path / "default"), only="snowfakery")
    catalogue, size = _read_json(default, CATALOGUES["plugins"])
    assert size < 50_000
    plugins = {p["plugin"]: p for p in catalogue["plugins"]}
    counters = plugins["snowfakery.standard_plugins.Counters"]
    assert counters["declare"] == "- plugin: snowfakery.standard_plugins.Counters"
    calls = {f["name"]: f["call"] for f in counters["functions"]}
    assert calls["NumberCounter"] == "${{Counters.NumberCounter(start=1, step=1, name=None, parent=None)}}"
    assert "snowfakery.standard_plugins.datasets.Dataset" in plugins
    # plugins that need a Salesforce org are refused here, and say why
    refused = {r["plugin"]: r["kind"] for r in catalogue["refused"]}
    assert refused["snowfakery.standard_plugins.Salesforce.SalesforceQuery"] == "SalesforceOrgRequired"
    profile = next(
        f for f in plugins["snowfakery.standard_plugins.Salesforce"]["functions"] if f["name"] == "ProfileId"
    )
    assert "Salesforce org" in profile["refused"]

    # a narrower allow-list narrows the catalogue: what an agent reads is what this server runs
    narrow = build_server(
        snowfakery_settings(tmp_path / "narrow", allowed_plugins=["snowfakery.standard_plugins.Counters"]),
        only="snowfakery",
    )
    catalogue, _ = _read_json(narrow, CATALOGUES["plugins"])
    assert [p["plugin"] for p in catalogue["plugins"]] == ["snowfakery.standard_plugins.Counters"]
    assert {r["kind"] for r in catalogue["refused"]} == {"PluginNotAllowed", "SalesforceOrgRequired"}


def test_output_formats_say_what_they_need(server: FastMCP) -> None:
    catalogue, size = _read_json(server, CATALOGUES["formats"])
    assert size < 20_000
    formats = {f["format"]: f for f in catalogue["formats"]}
    ok, caps = call_tool(server, "snowfakery.list_capabilities")
    assert ok and set(formats) == set(caps["output_formats"])
    assert formats["csv"]["needs"] == [] and formats["csv"]["available"] is True
    assert formats["png"]["needs"] == ["Graphviz's dot on the server"] and formats["png"]["binary"] is True
    assert formats["png"]["available"] is caps["graphviz_available"]
    assert catalogue["database_url"]["allowed"] is False


def test_instructions_name_every_tool_resource_and_prompt(server: FastMCP) -> None:
    async def surface() -> tuple[str, list[str], list[str], list[str], list[str]]:
        async with Client(server, mode="legacy") as client:  # the handshake's answer carries the instructions
            init = client.initialize_result
            tools = [t.name for t in await client.list_tools()]
            resources = [str(r.uri) for r in await client.list_resources()]
            templates = [t.uri_template for t in await client.list_resource_templates()]
            prompts = [p.name for p in await client.list_prompts()]
        assert init is not None
        return init.instructions or "", tools, resources, templates, prompts

    instructions, tools, resources, templates, prompts = asyncio.run(surface())
    missing = [
        name
        for name in [*tools, *prompts, *resources, *templates]
        if name not in instructions and name.split("/{")[0] not in instructions
    ]
    assert not missing, missing
    assert len(instructions) < 3000  # brief: a line per thing, not a manual
