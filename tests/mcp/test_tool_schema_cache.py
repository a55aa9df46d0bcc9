"""The tool schema cache (mcp_bridge/tool_schemas.py): a gateway built from the cache lists exactly what FastMCP
derives, answers the same, and never serves a file written for other code or settings."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from ade_platform.config import Settings, load_settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import StoreWriter
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from mcp_bridge.tool_schemas import ToolSchemaCache
from mcp_bridge.toolsets import build_toolset
from tests.conftest import REPO_ROOT

ALL_TOOLSETS = REPO_ROOT / "tests" / "contract" / "ade.all_toolsets.yaml"
DEMO = REPO_ROOT / "ade.yaml"
MANIFEST = {
    "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/manifest/v12.json"},
    "nodes": {
        "model.p.a": {"resource_type": "model", "name": "a", "depends_on": {"nodes": []}},
        "model.p.b": {"resource_type": "model", "name": "b", "depends_on": {"nodes": ["model.p.a"]}},
    },
}


def settings_in(home: Path, config: Path = ALL_TOOLSETS) -> Settings:
    settings = load_settings(config, env={"ADE_HOME": str(home)})
    StoreWriter(settings.store_root).publish("dbt_lineage_index", build_lineage_index(MANIFEST))
    return settings


def listing(server: FastMCP) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with Client(server) as client:
            tools = await client.list_tools()
        return {tool.name: tool.model_dump(mode="json", by_alias=True) for tool in tools}

    return asyncio.run(go())


def other_listings(server: FastMCP) -> list[Any]:
    """Resource templates, resources and prompts: FastMCP's per-listing `$ref` pass is off for them too."""

    async def go() -> list[Any]:
        async with Client(server) as client:
            found = [
                *await client.list_resource_templates(),
                *await client.list_resources(),
                *await client.list_prompts(),
            ]
        return [item.model_dump(mode="json", by_alias=True) for item in found]

    return asyncio.run(go())


def answers(server: FastMCP, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        out = []
        async with Client(server) as client:
            for name, arguments in calls:
                result = await client.call_tool(name, arguments, raise_on_error=False)
                if result.is_error:
                    out.append((True, json.loads(result.content[0].text)))
                else:  # provenance says how old the snapshot is: it moves between two calls
                    out.append(
                        (False, {k: v for k, v in result.structured_content.items() if k != "provenance"})
                    )
        return out

    return asyncio.run(go())


def stock_gateway(settings: Settings) -> FastMCP:
    """The gateway with every schema derived at this start (in the published form, mcp_bridge/schema_form.py)."""
    ctx = BridgeContext.from_settings(settings)
    gateway = FastMCP("ade", dereference_schemas=False)  # as the gateway: the toolsets' schemas are published
    for name in settings.mcp.toolsets:
        gateway.mount(build_toolset(name, ctx, cache_schemas=False))
    return gateway


def cache_files(home: Path) -> dict[str, int]:
    folder = home / "cache" / "tool-schemas"
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")} if folder.is_dir() else {}


@pytest.mark.parametrize("config", [ALL_TOOLSETS, DEMO], ids=["all-toolsets", "demo"])
def test_cached_gateway_lists_what_fastmcp_derives(tmp_path: Path, config: Path) -> None:
    settings = settings_in(tmp_path, config)
    stock = listing(stock_gateway(settings))
    assert not cache_files(tmp_path)

    first = listing(build_server(settings))  # derives and writes one file per toolset
    written = cache_files(tmp_path)
    assert len(written) == len(settings.mcp.toolsets)
    warm = listing(build_server(settings))  # reads them

    assert first == stock
    assert warm == stock
    assert other_listings(build_server(settings)) == other_listings(stock_gateway(settings))
    assert cache_files(tmp_path) == written, "a start that found every schema cached rewrote a file"
    for tool in warm.values():  # input schemas inlined; an output schema's `$ref`s point into its own `$defs`
        assert "$ref" not in json.dumps(tool["inputSchema"])
        output = tool.get("outputSchema") or {}
        for ref in re.findall(r'"\$ref": "([^"]*)"', json.dumps(output)):
            assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in output["$defs"], ref


def test_tools_built_from_the_cache_validate_and_answer_like_derived_ones(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    calls = [
        ("dbt_get_lineage", {"node_id": "model.p.a", "direction": "downstream"}),
        ("dbt_get_lineage", {"node_id": "model.p.a", "direction": "sideways"}),  # bad input
        ("dbt_get_lineage", {}),  # a missing required argument
        # a tool that takes FastMCP's Context (injected, not an argument): its client fails to connect
        ("dbtcloud_poll_run", {"run_id": 1, "timeout_seconds": 0}),
    ]
    cold = answers(build_server(settings), calls)
    warm = answers(build_server(settings), calls)
    assert warm == cold
    assert cold[0] == (False, cold[0][1]) and [n["node_id"] for n in cold[0][1]["nodes"]] == [
        "model.p.a",
        "model.p.b",
    ]
    assert cold[1][0] is True and cold[2][0] is True
    assert cold[3] == (True, cold[3][1]) and cold[3][1]["error"] == "connection_failed"


def test_a_file_for_other_settings_is_never_read(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    build_server(settings)
    path = ToolSchemaCache.for_settings(settings, "dbt-artifacts").path
    document = json.loads(path.read_text())
    document["tools"]["dbt_get_lineage"]["description"] = "written by hand"
    path.write_text(json.dumps(document))
    assert listing(build_server(settings))["dbt_get_lineage"]["description"] == "written by hand"

    changed = settings.model_copy(
        update={"limits": settings.limits.model_copy(update={"max_lineage_nodes": 7})}
    )
    assert ToolSchemaCache.for_settings(changed, "dbt-artifacts").path != path
    assert listing(build_server(changed))["dbt_get_lineage"]["description"] != "written by hand"
    assert not path.exists(), "the file of the old key stays behind"


def test_a_damaged_file_is_derived_again(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    expected = listing(build_server(settings))
    path = ToolSchemaCache.for_settings(settings, "warehouse").path
    path.write_text('{"tools": {"warehouse_execute": {"parameters": "not a schema"}')
    assert listing(build_server(settings)) == expected
    assert json.loads(path.read_text())["tools"]["warehouse_execute"]["parameters"]["type"] == "object"


def test_a_home_where_the_cache_cannot_be_written_still_serves(tmp_path: Path) -> None:
    settings = settings_in(tmp_path)
    (tmp_path / "cache").write_text("a file where the cache folder would go")
    assert set(listing(build_server(settings))) == set(listing(stock_gateway(settings)))
    assert (tmp_path / "cache").is_file()
