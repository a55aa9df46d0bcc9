"""Typed output shapes of the toolsets: what an agent can read from a tool's outputSchema before calling it.

Shapes are TypedDicts deriving from `OpenShape` (ade_platform/lib/shapes.py: open to extra keys, so an answer
that gains a field never turns into a client-side validation error), `NotRequired` where a field is optional.
`Provenance` is part of every answer. A tool names its shape in `@tool(..., answer=Shape)` or as its return
annotation (mcp_bridge/toolsets/base.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter


def schema_of(shape: Any) -> dict[str, Any]:
    """The JSON schema of one TypedDict, as a tool publishes it (`batch.deferred_schemas_of` derives a toolset's
    shapes together, the same schemas in one pass)."""
    return TypeAdapter(shape).json_schema(mode="serialization")
