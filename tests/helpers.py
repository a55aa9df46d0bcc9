"""Test helpers shared by the tests (and the benchmarks that start the platform like them)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from fastmcp import Client, FastMCP


@contextmanager
def environment(values: Mapping[str, str], unset: Iterable[str] = ()) -> Iterator[None]:
    """os.environ with `values` set and the `unset` names removed; all of it as it was again afterwards."""
    with patch.dict(os.environ, values):
        for name in unset:
            os.environ.pop(name, None)
        yield


def initialize_request(client_name: str = "t") -> dict[str, Any]:
    """The JSON-RPC body of an MCP initialize, for tests that POST it bare (status codes, headers)."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": "1"},
        },
    }


def tool_payload(result: Any) -> tuple[bool, Any]:
    """A tools/call result as (ok, structured payload or the structured error; unstructured text said so)."""
    if result.is_error:
        text = result.content[0].text if result.content else ""
        try:
            return False, json.loads(text)
        except ValueError:
            return False, {"error": "<unstructured>", "detail": text}
    return True, result.structured_content


async def _call(server: FastMCP, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
    async with Client(server) as client:
        return tool_payload(await client.call_tool(name, args, raise_on_error=False))


def call_tool(server: FastMCP, name: str, args: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """Call a tool through the MCP protocol (in-memory transport): (ok, structured payload or error)."""
    return asyncio.run(_call(server, name, args or {}))


async def _calls(server: FastMCP, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, Any]]:
    out = []
    async with Client(server) as client:
        for name, args in calls:
            out.append(tool_payload(await client.call_tool(name, args, raise_on_error=False)))
    return out


def call_tools(server: FastMCP, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, Any]]:
    """Many calls over one client session (faster than call_tool in a loop)."""
    return asyncio.run(_calls(server, calls))


def list_tools(server: FastMCP) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(server) as client:
            return await client.list_tools()

    return asyncio.run(go())


def read_only_open_world_tools(
    server: FastMCP, names: set[str], *, idempotent: bool = False
) -> dict[str, Any]:
    """The server's tools by name, after checking they are exactly `names` and each is annotated read-only, not
    destructive and open-world (and idempotent, when asked), with a description and a typed output schema."""
    tools = {t.name: t for t in list_tools(server)}
    assert set(tools) == names
    for tool in tools.values():
        ann = tool.annotations
        assert ann.read_only_hint is True and ann.destructive_hint is False and ann.open_world_hint is True, (
            tool.name
        )
        assert ann.idempotent_hint or not idempotent, tool.name
        assert tool.description and tool.output_schema and tool.output_schema.get("properties"), tool.name
    return tools


def assert_refused(
    server: FastMCP,
    cases: list[tuple[str, dict[str, Any], str]],
    *,
    base: dict[str, Any] | None = None,
    placeholders: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Call each (tool, arguments, code) case, `base` arguments first and any "@name" value replaced by
    `placeholders[name]` (an id known only at run time): each must be refused with its code. The errors, in order."""
    marks = placeholders or {}

    def filled(value: Any) -> Any:
        return marks[value] if isinstance(value, str) and value in marks else value

    calls = [(tool, {**(base or {}), **{k: filled(v) for k, v in args.items()}}) for tool, args, _ in cases]
    errors = []
    for (ok, error), (tool, args, code) in zip(call_tools(server, calls), cases, strict=True):
        assert not ok and error["error"] == code, (tool, args, error)
        errors.append(error)
    return errors


# ---- lineage inputs the lineage tests share -----------------------------------------------------------------
# The dbt Cloud job that builds tag:nightly (revenue and orders in the lineage tests' manifests).
NIGHTLY_JOBS = {"jobs": [{"id": 42, "name": "nightly", "execute_steps": ["dbt build --select tag:nightly"]}]}


def revenue_dashboard(elements: list[dict[str, Any]]) -> dict[str, Any]:
    """The BI inventories of one Looker dashboard, 7 "Revenue", with these tiles."""
    return {"looker": {"dashboards": [{"id": "7", "title": "Revenue", "elements": elements}]}}
