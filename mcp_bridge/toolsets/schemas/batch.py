"""The JSON schemas of many shapes from one pydantic pass.

A toolset publishes a schema per tool, and its shapes share parts (the provenance block, column and node
rows). Built one TypeAdapter at a time, every schema rebuilds those parts; built together they are built
once, which halves what the schemas add to the gateway's cold start. Each schema is the same document
`schema_of` gives: the shape at the top, with the definitions it refers to under `$defs`.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter
from typing_extensions import TypedDict

from mcp_bridge.tool_schemas import DeferredSchema


def schemas_of(*shapes: Any) -> dict[Any, dict[str, Any]]:
    """The JSON schema of each TypedDict, by shape, for `@server.tool(output_schema=schemas[Shape])`."""
    holder = TypedDict("_Shapes", {f"s{i}": shape for i, shape in enumerate(shapes)})  # type: ignore[operator]
    combined = TypeAdapter(holder).json_schema(mode="serialization")
    defs: dict[str, Any] = combined.get("$defs", {})
    out = {}
    for i, shape in enumerate(shapes):
        root = _def_name(combined["properties"][f"s{i}"]["$ref"])
        needed = _referenced(defs[root], defs)
        needed.discard(root)
        schema = dict(defs[root])
        if needed:
            schema["$defs"] = {name: defs[name] for name in sorted(needed)}
        out[shape] = schema
    return out


def _def_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _referenced(node: Any, defs: dict[str, Any], found: set[str] | None = None) -> set[str]:
    """Names of every definition reachable from node."""
    found = set() if found is None else found
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                name = _def_name(value)
                if name not in found:
                    found.add(name)
                    _referenced(defs[name], defs, found)
            else:
                _referenced(value, defs, found)
    elif isinstance(node, list):
        for item in node:
            _referenced(item, defs, found)
    return found


def deferred_schemas_of(*shapes: Any) -> dict[Any, DeferredSchema]:
    """`schemas_of`, derived only if a tool needs one: at a start whose tool schemas are cached, never."""
    built: dict[Any, dict[str, Any]] = {}

    def derive(shape: Any) -> dict[str, Any]:
        if not built:
            built.update(schemas_of(*shapes))
        return built[shape]

    return {shape: DeferredSchema(lambda shape=shape: derive(shape)) for shape in shapes}
