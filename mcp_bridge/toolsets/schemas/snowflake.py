"""Output shapes of the snowflake toolset (snowflake-cli-mcp spec section 4), with the spec's field names."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

Provenance = dict[str, Any]


class ObjectRef(TypedDict):
    objectType: str
    objectName: str
    database: str | None
    schema: str | None


class DdlAnswer(ObjectRef):
    ddl: str
    source: Literal["get_ddl", "information_schema"]
    note: NotRequired[str]
    provenance: Provenance
