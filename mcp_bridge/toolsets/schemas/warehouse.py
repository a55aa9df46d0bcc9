"""Output shapes of the warehouse toolset (agent-toolset spec category 2), with the spec's field names.

Values read from a warehouse (row cells, column defaults, user names) keep whatever JSON type the warehouse
gave them; counts and flags the tools compute are typed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field, with_config
from typing_extensions import TypedDict

from ade_platform.lib.bi.look_rows import MaskedColumn
from ade_platform.lib.shapes import OPEN, OpenShape
from mcp_bridge.toolsets.schemas.paging import Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance


class ExecuteAnswer(OpenShape):
    rows: list[dict[str, Any]]
    row_count: int
    columns: list[str]
    elapsed_ms: float
    bytes_processed: Annotated[int | None, Field(description="BigQuery only; null elsewhere.")]
    warehouse: str
    warehouse_type: str
    limit: Annotated[int, Field(description="The row limit applied (at most limits.max_rows).")]
    limit_requested: int
    limit_capped: Annotated[bool, Field(description="True when limit_requested was above limits.max_rows.")]
    limit_applied: Annotated[
        bool, Field(description="True when a LIMIT was added to or lowered in the query.")
    ]
    truncated: Annotated[bool, Field(description="True when more rows existed than the limit.")]
    masked_columns: NotRequired[
        Annotated[
            list[MaskedColumn],
            Field(description='Columns whose values are "<masked>": personal data or untraceable lineage.'),
        ]
    ]
    provenance: Provenance


# ---- warehouse_get_schema --------------------------------------------------------------------------------
class WarehouseColumn(OpenShape):
    """One row of INFORMATION_SCHEMA.COLUMNS."""

    column_name: str
    ordinal_position: int | None
    data_type: str
    is_nullable: Literal["YES", "NO"]
    column_default: Any
    character_maximum_length: int | None
    numeric_precision: int | None
    numeric_scale: int | None


class SchemaTable(OpenShape):
    table_name: str
    table_type: str | None
    columns: list[WarehouseColumn]
    column_count: int


class WarehouseSchemaAnswer(OpenShape):
    """One table (table_name set: `columns`), or every table of the schema (table_name null: `tables`)."""

    database: str | None
    schema: str
    table_name: str | None
    table_type: NotRequired[str | None]
    columns: NotRequired[list[WarehouseColumn]]
    tables: NotRequired[list[SchemaTable]]
    table_count: NotRequired[int]
    column_count: int
    truncated: NotRequired[
        Annotated[bool, Field(description="Whole schema: true when more tables follow (next_cursor).")]
    ]
    next_cursor: NotRequired[
        Annotated[str | None, Field(description="Whole schema: pass as cursor for the next page of tables.")]
    ]
    total: NotRequired[Annotated[int, Field(description="Whole schema: tables in the schema.")]]
    warehouse: str
    provenance: Provenance


# ---- warehouse_detect_schema_drift -----------------------------------------------------------------------
class Since(OpenShape):
    """The first schema snapshot (or "live") that shows the change."""

    first_seen_version: str
    first_seen_at: str
    at_or_before: Annotated[bool, Field(description="Even the oldest retained snapshot shows it.")]


class AddedColumn(OpenShape):
    column_name: str
    data_type: str | None
    note: str
    since: NotRequired[Since]


class RemovedColumn(OpenShape):
    column_name: str
    declared_type: str | None
    note: str
    since: NotRequired[Since]


class TypeChange(OpenShape):
    column_name: str
    manifest_type: str | None
    warehouse_type: str | None
    normalized: Annotated[list[str | None], Field(description="[manifest type, warehouse type], normalized.")]
    declared_type_source: str | None
    note: str
    since: NotRequired[Since]


Rename = with_config(OPEN)(TypedDict("Rename", {"from": str, "to": str}))  # `from` is a Python keyword


class DeclaredIn(OpenShape):
    asset: str
    version: str


class DriftAnswer(OpenShape):
    model_name: str
    unique_id: str
    relation: str
    declared_from: Annotated[str, Field(description="manifest (the YAML declares columns) or catalog")]
    drift_detected: bool
    relation_missing: bool
    added_in_warehouse: list[AddedColumn]
    removed_from_warehouse: list[RemovedColumn]
    type_changed: list[TypeChange]
    likely_renames: list[Rename]
    unchanged_count: int
    checked_at: str
    observed_at: str
    declared_in: DeclaredIn
    warehouse: str
    provenance: Provenance


# ---- warehouse_check_freshness ---------------------------------------------------------------------------
class FreshnessAnswer(OpenShape):
    table_name: str
    timestamp_column: str
    max_timestamp: str | None
    checked_at: str
    staleness_hours: float | None
    freshness_threshold_hours: float
    is_fresh: bool
    row_count_sampled: int | None
    observed_at: NotRequired[
        Annotated[str, Field(description="From Dagster's freshness snapshot: when it was taken.")]
    ]
    provenance: Provenance


# ---- warehouse_get_query_history -------------------------------------------------------------------------
class HistoryEntry(OpenShape):
    query_id: str | None
    query_text_truncated: Annotated[str, Field(description="At most 500 characters, literals stripped.")]
    user_name: Any
    start_time: Any
    end_time: Any
    duration_ms: int | None
    bytes_scanned: int | None
    rows_produced: int | None
    execution_status: Any


class QueryHistoryAnswer(Paged):
    queries: list[HistoryEntry]
    total_returned: Annotated[int, Field(description="Queries on this page.")]
    total: NotRequired[Annotated[int, Field(description="Queries found; absent when 1000 or more.")]]
    lookback_days: int
    warehouse: str
    provenance: Provenance


# ---- warehouse_explain_query -----------------------------------------------------------------------------
class ExplainAnswer(OpenShape):
    plan_text: str
    estimated_bytes_scanned: int | None
    estimated_cost_credits: float | None
    notes: str
    warehouse: str
    provenance: Provenance


# ---- warehouse_detect_duplicates -------------------------------------------------------------------------
class DuplicateSample(OpenShape):
    """The key columns' values (one field per key column), how often that key occurs, and one of its rows."""

    occurrence_count: int
    sample_row: dict[str, Any]


class DuplicatesAnswer(OpenShape):
    table_name: str
    key_columns: list[str]
    total_rows: int
    distinct_key_count: int
    duplicate_key_count: int
    duplicate_row_count: int
    duplication_rate_pct: float
    severity: Annotated[
        Literal["none", "low", "medium", "high"],
        Field(description="none: no duplicates; low < 0.1 % of rows; medium 0.1-1 %; high > 1 %"),
    ]
    sample_duplicates: list[DuplicateSample]
    warehouse: str
    provenance: Provenance
