"""Does a tool's published output schema describe its whole answer? The MCP client already rejects a value of
the wrong type; this finds the keys an answer carries that its schema never mentions (schemas stay open, so
the client lets those through silently)."""

from __future__ import annotations

from typing import Any

from fastmcp import FastMCP

from mcp_bridge.toolsets.schemas.provenance import ORIGIN_KEYS
from tests.helpers import call_tools, list_tools


def undeclared_keys(schema: dict[str, Any], value: Any, where: str = "") -> list[str]:
    """Paths of the keys in value that schema does not declare (free-form maps and Any are not checked)."""
    if isinstance(value, dict) and "properties" in schema:
        found = [f"{where}.{key}" for key in value if key not in schema["properties"]]
        for key, sub in schema["properties"].items():
            if key in value:
                found += undeclared_keys(sub, value[key], f"{where}.{key}")
        return found
    if isinstance(value, list) and "items" in schema:
        return [path for item in value for path in undeclared_keys(schema["items"], item, f"{where}[]")]
    for branch in schema.get("anyOf", ()):
        if _kind_matches(branch, value):
            return undeclared_keys(branch, value, where)
    return []


def _kind_matches(schema: dict[str, Any], value: Any) -> bool:
    kind = schema.get("type")
    return (kind == "object" and isinstance(value, dict)) or (kind == "array" and isinstance(value, list))


def assert_declared(server: FastMCP, answers: list[tuple[str, Any]], free: tuple[str, ...] = ()) -> None:
    """Every key of each (tool, answer) is declared by that tool's published output schema, except under the
    paths in `free`, whose keys depend on the question (e.g. one per key column)."""
    schemas = {tool.name: tool.output_schema for tool in list_tools(server)}
    for name, answer in answers:
        extra = [
            p for p in undeclared_keys(schemas[name], answer) if not p.startswith(free) and not _origin_key(p)
        ]
        assert not extra, f"{name} answers keys its output schema does not declare: {extra}"


def _origin_key(path: str) -> bool:
    """A provenance key of one origin: named once in the gateway's instructions (PROVENANCE_KEYS), not typed in
    every schema (mcp_bridge/toolsets/schemas/provenance.py)."""
    parts = path.split(".")
    return len(parts) > 2 and parts[1] == "provenance" and parts[2].split("[")[0] in ORIGIN_KEYS


def assert_answers_match_their_schemas(server: FastMCP, calls: list[tuple[str, dict[str, Any]]]) -> None:
    """Call each tool through MCP (the client validates types) and check that every key is declared."""
    results = call_tools(server, calls)
    for (name, args), (ok, answer) in zip(calls, results, strict=True):
        assert ok, (name, args, answer)
    assert_declared(server, [(name, answer) for (name, _), (_, answer) in zip(calls, results, strict=True)])
