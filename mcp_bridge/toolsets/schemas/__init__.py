"""Typed output shapes of the toolsets: what an agent can read from a tool's outputSchema before calling it.

Shapes are TypedDicts (total=False where a field is optional) and stay open to extra keys, so an answer that
gains a field never turns into a client-side validation error. `Provenance` is part of every answer.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter


def schema_of(shape: Any) -> dict[str, Any]:
    """The JSON schema of a TypedDict, for `@server.tool(output_schema=...)` where the tool returns a
    ToolResult (whose own annotation says nothing about its structured content)."""
    return TypeAdapter(shape).json_schema(mode="serialization")
