"""`ade mcp` answers its listing from what an earlier start served, and builds its toolsets after it
(mcp_bridge/listing.py): real gateway processes over stdio, as a host starts them.

- The second start says exactly what the first said (initialize, tools, resources, templates, prompts), with no
  toolset module loaded when its listing goes out, and its first call is answered by the real toolsets.
- A listing file that no longer says what the toolsets say is served once, then rewritten, and the session is
  told `notifications/tools/list_changed`; the next listing is the real one.
- Requests that need the toolsets (a call, a resource read, an incident subscription) wait for the build.
- A build that fails makes each such request a structured error, not a hang.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import TOOLSET_MODULES, Settings, load_settings
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import StoreWriter
from benchmarks.synthetic import synthetic_manifest
from mcp_bridge.listing import DeferredToolsets, Listing, listing_path, load_listing
from tests.conftest import REPO_ROOT
from tests.contract.test_import_boundary import ALL_TOOLSETS_CONFIG
from tests.processes import StdioGateway

CONFIGS = pytest.mark.parametrize(
    "config", [REPO_ROOT / "ade.yaml", ALL_TOOLSETS_CONFIG], ids=["demo", "all-toolsets"]
)
LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


def session(config: Path, home: Path) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """One start: what it said at initialize and to each listing, and the modules loaded at its tool listing."""
    gateway = StdioGateway(config, home)
    try:
        init = gateway.start()
        said = {method: gateway.ask(method)["result"] for method in LISTS}
        modules = json.loads(gateway.record.read_text())
    finally:
        gateway.close()
    return init, said, modules


def gateway_settings(config: Path, home: Path) -> Settings:
    """The settings the gateway processes read: this environment (emulator URLs an earlier test exported are
    part of the listing's key), with the test's home."""
    return load_settings(config, env={**os.environ, "ADE_HOME": str(home)})


def toolset_modules(modules: list[str]) -> list[str]:
    packages = tuple(f"mcp_bridge.toolsets.{module.split('.')[0]}" for module in TOOLSET_MODULES.values())
    return sorted(m for m in modules if m.startswith(packages))


@CONFIGS
def test_the_second_start_says_what_the_first_said_before_building_a_toolset(
    config: Path, tmp_path: Path
) -> None:
    first_init, first, first_modules = session(config, tmp_path)  # builds, then records its listing
    assert toolset_modules(first_modules), "the first start builds its toolsets before its listing"
    settings = gateway_settings(config, tmp_path)
    assert load_listing(settings) is not None, "the first start recorded what it listed"
    second_init, second, second_modules = session(config, tmp_path)
    assert toolset_modules(second_modules) == [], "the listing came from the file, before any toolset"
    assert second_init == first_init
    for method in LISTS:
        assert second[method] == first[method], method
    assert len(second["tools/list"]["tools"]) >= 40


def test_a_call_right_after_the_listing_is_answered_by_the_real_toolsets(tmp_path: Path) -> None:
    settings = gateway_settings(ALL_TOOLSETS_CONFIG, tmp_path)
    StoreWriter(settings.store_root).publish("dbt_lineage_index", build_lineage_index(synthetic_manifest(60)))
    session(ALL_TOOLSETS_CONFIG, tmp_path)  # records the listing
    gateway = StdioGateway(ALL_TOOLSETS_CONFIG, tmp_path)
    try:
        gateway.start()
        # sent together: the call arrives while the toolsets are being built, and waits for them
        listed, called = (
            gateway.send("tools/list"),
            gateway.send(
                "tools/call",
                {
                    "name": "dbt_get_lineage",
                    "arguments": {"node_id": "model.synthetic.mart_0", "direction": "upstream"},
                },
            ),
        )
        assert gateway.answer(listed)["result"]["tools"]
        answer = gateway.answer(called)["result"]
        assert not answer.get("isError"), answer
        lineage = answer["structuredContent"]
        assert lineage["provenance"]["asset"] == "dbt_lineage_index" and lineage["nodes"], lineage
        assert json.loads(gateway.record.read_text()) and not toolset_modules(
            json.loads(gateway.record.read_text())
        )
        # the incidents push is the toolset's: a subscription waits for it too, then is taken
        subscribed = gateway.ask("resources/subscribe", {"uri": "ade://incidents/open"})
        assert subscribed.get("result") == {}, subscribed
        read = gateway.ask("resources/read", {"uri": "ade://incidents/open"})
        assert json.loads(read["result"]["contents"][0]["text"])["incidents"] == [], read
    finally:
        gateway.close()


def test_an_out_of_date_listing_is_served_once_then_rewritten_and_the_session_told(tmp_path: Path) -> None:
    config = REPO_ROOT / "ade.yaml"
    _, real, _ = session(config, tmp_path)
    settings = gateway_settings(config, tmp_path)
    path = listing_path(settings)
    document = json.loads(path.read_text())
    document["tools"][0]["description"] = "an old description"  # what a change the key cannot see leaves
    path.write_text(json.dumps(document))

    gateway = StdioGateway(config, tmp_path)
    try:
        gateway.start()
        stale = gateway.ask("tools/list")["result"]["tools"]
        assert stale[0]["description"] == "an old description"
        gateway.ask("resources/list")  # waits for the build, after which the listing is checked
        for _ in range(100):
            if "notifications/tools/list_changed" in gateway.notifications:
                break
            gateway.ask("ping")
        assert "notifications/tools/list_changed" in gateway.notifications, gateway.notifications
        assert gateway.ask("tools/list")["result"] == real["tools/list"]
    finally:
        gateway.close()
    assert load_listing(settings) == Listing(
        real["tools/list"]["tools"], document["instructions"], document["tasks"]
    )


def test_a_build_that_fails_makes_each_request_that_needs_it_a_structured_error(tmp_path: Path) -> None:
    from fastmcp import Client, FastMCP

    settings = load_settings(REPO_ROOT / "ade.yaml", env={"ADE_HOME": str(tmp_path)})
    server = FastMCP("deferred", dereference_schemas=False)  # as the gateway: schemas are published as listed
    listing = Listing([{"name": "ping", "inputSchema": {"type": "object"}}], "instructions", False)

    def build() -> dict[str, Any]:
        raise OSError("the dbt project is gone")

    server.add_middleware(DeferredToolsets(server, settings, listing, build, lambda toolsets: None))

    async def calls() -> None:
        async with Client(server) as client:
            assert [tool.name for tool in await client.list_tools()] == ["ping"]
            for _ in range(2):  # the failure is kept: the second call does not try again, nor hang
                with pytest.raises(Exception) as raised:
                    await asyncio.wait_for(client.call_tool("ping", {}), 30)
                payload = json.loads(str(raised.value))
                assert payload["error"] == "internal_error" and "OSError" in payload["detail"], payload
                assert "dbt project" not in payload["detail"]  # the reason stays in the log

    asyncio.run(calls())
