"""snowfakery.draft_recipe through the MCP protocol: a client whose sampling handler returns scripted drafts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client, FastMCP

from mcp_bridge.server import build_server
from tests.mcp.test_snowfakery_tools import snowfakery_settings

BROKEN = "- snowfakery_version: 3\n- object: Account\n  fields:\n    name: ${{ undefined_thing }}\n"
FIXED = "```yaml\n- snowfakery_version: 3\n- object: Account\n  fields:\n    name:\n      fake: company\n```"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> FastMCP:
    return build_server(snowfakery_settings(tmp_path_factory.mktemp("draft")), only="snowfakery")


class ScriptedModel:
    """A client's model: answers each sampling request with the next scripted draft, and keeps what it was sent."""

    def __init__(self, *drafts: str) -> None:
        self.drafts = list(drafts)
        self.requests: list[list[str]] = []

    async def __call__(self, messages: Any, params: Any, context: Any) -> str:
        self.requests.append([m.content.text for m in messages])
        return self.drafts.pop(0)


def _draft(server: FastMCP, args: dict[str, Any], **client: Any) -> tuple[bool, Any]:
    async def go() -> Any:
        async with Client(server, **client) as session:
            return await session.call_tool("snowfakery.draft_recipe", args, raise_on_error=False)

    result = asyncio.run(go())
    if result.is_error:
        return False, json.loads(result.content[0].text)
    return True, result.structured_content


# "legacy" negotiates 2025-11-25: each draft is a sampling request on the session's back-channel. "auto" negotiates
# 2026-07-28, which has none: each draft is asked for in an input_required answer, which the client fulfils with
# its sampling handler and then calls again (multi-round-trip requests).
REVISIONS = pytest.mark.parametrize("mode", ["legacy", "auto"], ids=["2025-11-25", "2026-07-28"])


@REVISIONS
def test_a_broken_draft_is_explained_back_and_the_fixed_one_returned(server: FastMCP, mode: str) -> None:
    model = ScriptedModel(BROKEN, FIXED)
    ok, answer = _draft(
        server,
        {"description": "accounts with company names", "target_schema": "CREATE TABLE Account (name text)"},
        sampling_handler=model,
        mode=mode,
    )
    assert ok, answer
    assert answer["valid"] is True and answer["stopped"] == "valid" and answer["round_count"] == 2
    first, second = answer["rounds"]
    assert first["valid"] is False and first["recipe_text"] == BROKEN
    assert (
        first["errors"]
        and first["errors"][0]["line"] == 4
        and "undefined_thing" in first["errors"][0]["message"]
    )
    assert second == {"round": 2, "valid": True, "recipe_text": answer["recipe_text"], "errors": []}
    assert answer["recipe_text"].startswith("- snowfakery_version: 3") and "```" not in answer["recipe_text"]
    # what the model was asked: the description and target schema, then its own draft and the server's findings
    assert (
        "accounts with company names" in model.requests[0][0]
        and "CREATE TABLE Account" in model.requests[0][0]
    )
    assert model.requests[1][1] == BROKEN
    assert "line 4" in model.requests[1][2] and "undefined_thing" in model.requests[1][2]


@REVISIONS
def test_rounds_are_bounded(server: FastMCP, mode: str) -> None:
    model = ScriptedModel(BROKEN, BROKEN, FIXED)
    ok, answer = _draft(
        server, {"description": "accounts", "max_rounds": 2}, sampling_handler=model, mode=mode
    )
    assert ok and answer["valid"] is False and answer["stopped"] == "max_rounds"
    assert [r["valid"] for r in answer["rounds"]] == [False, False] and len(model.requests) == 2


@REVISIONS
def test_a_client_without_sampling_is_pointed_to_the_author_recipe_prompt(server: FastMCP, mode: str) -> None:
    ok, error = _draft(server, {"description": "accounts"}, mode=mode)
    assert not ok and error["error"] == "sampling_unavailable"
    assert error["prompt"] == "author_recipe" and "author_recipe" in error["hint"]


def test_drafts_are_validated_in_the_sandbox_policy(tmp_path: Path) -> None:
    """A draft that declares a plugin outside the allow-list is invalid like any other recipe: never imported."""
    strict = build_server(snowfakery_settings(tmp_path, allowed_plugins=[]), only="snowfakery")
    plugin = "- plugin: snowfakery.standard_plugins.Counters\n- object: A\n"
    ok, answer = _draft(
        strict, {"description": "a", "max_rounds": 1}, sampling_handler=ScriptedModel(plugin), mode="legacy"
    )
    assert ok and answer["valid"] is False
    assert "allow-list" in answer["rounds"][0]["errors"][0]["message"]
