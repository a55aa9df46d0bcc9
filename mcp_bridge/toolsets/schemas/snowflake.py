"""Output shapes of the snowflake toolset (snowflake-cli-mcp spec section 4), with the spec's field names.

Every shape is open to extra keys (`extra="allow"`: the schema says `additionalProperties: true` and
serializing keeps keys a shape does not list), so an answer that gains a field stays valid for clients.
Fields only some answers carry are NotRequired; values a shape cannot know in advance (rows of SHOW or
DESCRIBE, whose columns are Snowflake's) are plain objects.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import with_config
from typing_extensions import TypedDict

from ade_platform.lib.shapes import OPEN, OpenShape
from mcp_bridge.toolsets.schemas.paging import GraphSummary, Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance

Row = dict[str, Any]


class LiveProvenance(Provenance):
    """`LiveResult.stamp()`: the audited Dagster run that produced the answer."""

    run_id: str  # type: ignore[misc]  (always set here: the root's is optional)
    elapsed_ms: float  # type: ignore[misc]


class ConnectionProvenance(LiveProvenance):
    """A read-only tool's stamp, with the connection and environment it ran against."""

    connection: str | None
    environment: str | None


class ObjectRef(OpenShape):
    objectType: str
    objectName: str
    database: str | None
    schema: str | None


class DdlAnswer(ObjectRef):
    ddl: str
    source: Literal["get_ddl", "information_schema"]
    note: NotRequired[str]
    provenance: ConnectionProvenance


# -- execute_sql / execute_scalar ------------------------------------------------------------------------
class ResultColumn(OpenShape):
    """A result column: name and type; DATA answers add the null percentage (null when withheld)."""

    name: str
    type: str
    null_percentage: NotRequired[float | None]


class QueryAnswer(OpenShape):
    """METADATA: `columns` are names and `rows` the (filtered) rows; SCALAR: typed `columns` and the values;
    DATA: `columns` with types and null percentages, `row_count`, never a row. `_queryType` / `_rowCount`
    are the spec's names for `classification` (lower case) / `row_count`."""

    classification: Literal["METADATA", "SCALAR", "DATA", "WRITE"]
    reasons: list[str]
    redacted: bool
    columns: list[str] | list[ResultColumn] | None
    row_count: int | None
    _queryType: Literal["metadata", "scalar", "data", "write"] | None
    _rowCount: int | None
    rows: NotRequired[list[Row]]
    truncated: NotRequired[bool]
    executed: NotRequired[bool]
    note: NotRequired[str]
    row_count_exact: NotRequired[bool]
    types_inferred: NotRequired[bool]
    stats_withheld: NotRequired[bool]
    names_withheld: NotRequired[bool]
    variant_interfaces: NotRequired[dict[str, str]]
    provenance: ConnectionProvenance


class ScalarAnswer(QueryAnswer):
    """execute_scalar: as execute_sql, plus the spec's QUERY_CLASSIFIED flag when a statement that reads
    row values was answered with the redacted, schema-only response."""

    reclassified: NotRequired[bool]
    error: NotRequired[Literal["QUERY_CLASSIFIED"]]
    code: NotRequired[str]
    message: NotRequired[str]


# -- discovery -----------------------------------------------------------------------------------------------
class ObjectList(Paged):
    objectType: str
    objects: list[Row]
    count: int
    total: NotRequired[int]
    provenance: ConnectionProvenance


class ObjectDescription(OpenShape):
    object: ObjectRef
    metadata: list[Row]
    provenance: ConnectionProvenance


# -- lineage -----------------------------------------------------------------------------------------------
class LineageNode(OpenShape):
    name: str
    direction: Literal["upstream", "downstream"]
    distance: int
    type: str


Edge = with_config(OPEN)(TypedDict("Edge", {"from": str, "to": str}))  # `from` is a Python keyword


class DependencyRow(OpenShape):
    """One edge in the row shape of SNOWFLAKE.ACCOUNT_USAGE.OBJECT_DEPENDENCIES (the spec's `lineage`)."""

    REFERENCED_DATABASE: str | None
    REFERENCED_SCHEMA: str | None
    REFERENCED_OBJECT_NAME: str | None
    REFERENCED_OBJECT_DOMAIN: str
    REFERENCING_DATABASE: str | None
    REFERENCING_SCHEMA: str | None
    REFERENCING_OBJECT_NAME: str | None
    REFERENCING_OBJECT_DOMAIN: str
    DEPENDENCY_TYPE: str


class LineageAnswer(ObjectRef, Paged):
    direction: Literal["upstream", "downstream", "both"]
    depth: int | None
    nodes: list[LineageNode]
    edges: list[Edge]  # type: ignore[valid-type]
    lineage: list[DependencyRow]
    source: Literal["object_dependencies", "view_definitions"]
    note: str
    summary: NotRequired[GraphSummary]
    provenance: ConnectionProvenance


class Dependency(OpenShape):
    name: str
    type: str
    REFERENCE_OBJECT_NAME: str
    REFERENCE_OBJECT_TYPE: str


class DependenciesAnswer(ObjectRef, Paged):
    dependencies: list[Dependency]
    total: int
    source: Literal["object_dependencies", "view_definitions", "routine_definition"]
    note: str
    provenance: ConnectionProvenance


# -- sync and DDL --------------------------------------------------------------------------------------------
class SyncResult(OpenShape):
    type: str
    name: str
    path: str
    status: Literal["synced"]


class SyncAnswer(OpenShape):
    """The spec's `synced` / `results`, with what changed on disk and the repository index file."""

    synced: int
    written: int
    unchanged: int
    removed: int
    counts: dict[str, int]
    index: str
    notes: list[str]
    targetDir: str
    results: list[SyncResult]
    truncated: bool
    provenance: LiveProvenance


class StalenessAnswer(OpenShape):
    isStale: bool
    objectName: str
    objectType: str
    localPath: str
    localHash: str
    remoteHash: str
    source: Literal["get_ddl", "information_schema"]
    note: NotRequired[str]
    provenance: ConnectionProvenance


class DdlResult(OpenShape):
    """execute_ddl: the spec's `success`, the statement verb and the objects it touched; never rows."""

    success: bool
    statement: str
    objects: list[str]
    provenance: LiveProvenance
