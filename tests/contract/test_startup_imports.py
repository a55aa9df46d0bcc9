"""What `ade mcp` loads before its tool list reaches the host: a real gateway process over stdio, as a host starts it.

The process is told (ADE_MODULES_AT_LISTING, mcp_bridge/startup.py) to write the names of its loaded modules at
the moment it answers the first tools/list. Nothing on the list below may be among them: each is loaded by a live
tool's first call, or by the warm-ups that start once the listing is answered. The in-process check of the cached
path (a cached tool answered as well) is tests/contract/test_import_boundary.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.contract.test_import_boundary import ALL_TOOLSETS_CONFIG, HEAVY
from tests.processes import StdioGateway

# Besides the client libraries of HEAVY: what the snowfakery warm-up loads (its library, the recipe schema's
# checker), Dagster's side of the gateway, the HTTP transport's sign-in stack (stdio needs none), and the
# `$ref` inliner a start that finds every tool schema cached does not need.
NOT_BEFORE_LISTING = (
    *HEAVY,
    "jsonschema",
    "ade_platform.live",
    "ade_platform.lib.snowfakery.sandbox",
    "ade_platform.lib.snowfakery.schemacheck",
    "ade_platform.lib.guard.classify",
    "mcp_bridge.http_security",
    "jsonref",
    "requests",
    "fastmcp_tasks",  # the tasks extension's engine (mcp_bridge/tasks.py): a warm-up, then the first task
    "docket",
)


def modules_at_listing(config: Path, home: Path) -> list[str]:
    """Start `ade mcp` over stdio, initialize and list the tools; the modules it had loaded when it answered."""
    gateway = StdioGateway(config, home)
    try:
        gateway.start()
        answer = gateway.ask("tools/list")
        assert answer["result"]["tools"], answer
    finally:
        gateway.close()
    return json.loads(gateway.record.read_text())


def forbidden(modules: list[str]) -> list[str]:
    return sorted(
        m
        for m in modules
        if m in NOT_BEFORE_LISTING or m.startswith(tuple(f"{n}." for n in NOT_BEFORE_LISTING))
    )


@pytest.mark.parametrize(
    "config", [REPO_ROOT / "ade.yaml", ALL_TOOLSETS_CONFIG], ids=["demo", "all-toolsets"]
)
def test_ade_mcp_lists_its_tools_before_loading_anything_heavy(config: Path, tmp_path: Path) -> None:
    first = modules_at_listing(config, tmp_path)  # derives the tool schemas and caches them
    assert "mcp_bridge.server" in first, "the record is not the gateway's"
    assert forbidden([m for m in first if m.split(".")[0] not in ("jsonref", "requests")]) == []
    cached = modules_at_listing(config, tmp_path)
    assert forbidden(cached) == [], f"loaded before the tool list was served: {forbidden(cached)}"
