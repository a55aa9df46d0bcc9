"""Output shapes of the dbt-artifacts and dbt-project toolsets (agent-toolset spec categories 1 and 6).

Field names are the spec's. Where the spec returns a bare list, the answer is an object with that list under a
named key (`affected`, `tests`, `patterns`, `findings`, `models`, `references`) next to totals and provenance:
the key is described here so an agent finds it in the output schema before calling. Values read from dbt's
artifacts that dbt may leave empty are nullable.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field, with_config
from typing_extensions import TypedDict

from ade_platform.lib.shapes import OPEN, OpenShape
from mcp_bridge.toolsets.schemas.paging import GraphSummary, Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance


def _spec_list(what: str) -> Any:
    return Field(description=f"The spec's list: {what}.")


# ---- dbt_get_lineage -------------------------------------------------------------------------------------
class LineageNode(OpenShape):
    node_id: str
    resource_type: str | None
    name: str | None
    schema: str | None
    materialization: str | None
    depth: Annotated[int, Field(description="Hops from the root node (0 = the root).")]


LineageEdge = with_config(OPEN)(
    TypedDict("LineageEdge", {"from": str, "to": str})
)  # `from` is a Python keyword


class LineageAnswer(Paged):
    root_node: str
    direction: Literal["upstream", "downstream"]
    depth: int | None
    nodes: list[LineageNode]
    edges: list[LineageEdge]
    total_nodes: int
    summary: NotRequired[GraphSummary]
    provenance: Provenance


# ---- dbt_get_blast_radius --------------------------------------------------------------------------------
class AffectedNode(OpenShape):
    node_id: str
    name: str
    resource_type: str
    materialization: str | None
    hops_from_source: int
    has_downstream_dependents: bool


class BlastRadiusAnswer(Paged):
    node_id: str
    affected: Annotated[
        list[AffectedNode], _spec_list("every node downstream (seeds excluded), nearest first")
    ]
    total_affected: int
    provenance: Provenance


# ---- dbt_get_model_tests ---------------------------------------------------------------------------------
class ModelTest(OpenShape):
    test_id: str
    test_name: str | None
    test_type: Annotated[
        str,
        Field(description="not_null, unique, accepted_values, relationships, <package>.<test>, or singular"),
    ]
    test_kind: str
    column_name: str | None
    model_name: str | None
    attached_node: str | None
    defined_on_other_node: bool
    severity: str
    config: dict[str, Any]
    tags: list[str]


class ModelTestsAnswer(Paged):
    model_name: str | None
    node_id: str
    tests: Annotated[list[ModelTest], _spec_list("the tests on the model; empty when it is untested")]
    total: int
    provenance: Provenance


# ---- dbt_get_failed_models -------------------------------------------------------------------------------
class RunNode(OpenShape):
    node_id: str
    name: str
    resource_type: str
    status: str
    error_message: str | None
    upstream_failure: NotRequired[
        Annotated[str | None, Field(description="Skipped nodes: the nearest failed ancestor.")]
    ]
    execution_time_seconds: NotRequired[float | None]
    started_at: NotRequired[str | None]
    failures: NotRequired[int]


class DbtInvocationInfo(OpenShape):
    """One dbt invocation as dbt's own log (`<project>/logs/dbt.log`) reports it."""

    invocation_id: str | None
    command: Annotated[str | None, Field(description='"build", "run", "test", "source freshness", ...')]
    status: Annotated[
        Literal["running", "success", "error", "parse_error"],
        Field(
            description="parse_error: failed before running any node (parse or compile error, no artifacts)"
        ),
    ]
    started_at: str | None
    finished_at: str | None
    error: Annotated[str | None, Field(description="The error dbt printed (secrets scrubbed, capped).")]
    failed_nodes: Annotated[list[str], Field(description="unique_ids, or names when dbt printed only names")]
    wrote_artifacts: Annotated[
        bool, Field(description="Whether its run_results.json is in the target folder.")
    ]
    this_run: Annotated[
        bool,
        Field(
            description="true: the answer's run results are this invocation's; false: a newer invocation whose "
            "results are not in the answer (the answer is then stale when it failed or is running)"
        ),
    ]


class FailedModelsAnswer(Paged):
    run_id: str | None
    command: str | None
    run_started_at: str | None
    generated_at: str | None
    elapsed_seconds: float | None
    dbt_version: str | None
    failed: list[RunNode]
    skipped: list[RunNode]
    warnings: list[RunNode]
    total_failed: int
    total_skipped: int
    total_warnings: int
    total_passed: int
    total_results: int
    count_by_status: dict[str, int]
    results_not_in_manifest: int | None
    invocation: NotRequired[DbtInvocationInfo]
    provenance: Provenance


# ---- dbt_detect_silent_skip ------------------------------------------------------------------------------
class PatternCheck(OpenShape):
    pattern: str
    expected_match_count: int
    actual_match_count: int
    missing_models: list[str]
    missing_node_ids: list[str]
    severity: Literal["ok", "warning"]
    reason: Annotated[
        Literal["not_in_run_results", "no_match"] | None,
        Field(description="no_match: the pattern names no model in the manifest."),
    ]


class SilentSkipAnswer(OpenShape):
    patterns: Annotated[list[PatternCheck], _spec_list("one entry per expected pattern")]
    all_satisfied: bool
    missing_total: int
    invocation: NotRequired[DbtInvocationInfo]
    provenance: Provenance


# ---- dbt_get_schema --------------------------------------------------------------------------------------
class SchemaColumn(OpenShape):
    column_name: str | None
    data_type: str | None
    comment: str | None
    index: int | None
    tags: NotRequired[list[str]]


class SchemaAnswer(OpenShape):
    model_name: str | None
    node_id: str
    source: Literal["manifest", "catalog"]
    schema: str | None
    database: str | None
    manifest_generated_at: NotRequired[str | None]
    catalog_generated_at: NotRequired[str | None]
    relation_type: NotRequired[str | None]
    in_catalog: NotRequired[bool]
    columns_observed_at: NotRequired[
        Annotated[
            str,
            Field(description="The columns come from a live read of the relation made after the catalog."),
        ]
    ]
    exists_in_warehouse: NotRequired[
        Annotated[bool, Field(description="What that live read found: false when the relation is gone.")]
    ]
    note: NotRequired[str]
    columns: list[SchemaColumn]
    total_columns: int
    provenance: Provenance


# ---- dbt_scan_pii_risk -----------------------------------------------------------------------------------
class PiiFinding(OpenShape):
    model_name: str
    node_id: str
    resource_type: str
    column_name: str
    pii_pattern_matched: str
    has_pii_tag: bool
    has_masking_policy: bool
    materialization: str | None
    data_type: str | None
    declared_in: Annotated[str, Field(description="manifest, catalog or manifest+catalog")]
    risk_level: Literal["high", "medium", "low"]


class PiiAnswer(Paged):
    findings: Annotated[
        list[PiiFinding], _spec_list("columns that look personal, riskiest and untagged first")
    ]
    total: int
    count_by_risk: dict[str, int]
    untagged: int
    catalog_used: bool
    provenance: Provenance


# ---- dbt_get_source_freshness ----------------------------------------------------------------------------
class SourceFreshness(OpenShape):
    source_name: str | None
    table_name: str | None
    unique_id: str
    status: str
    max_loaded_at: str | None
    snapshotted_at: str | None
    age_seconds: float | None
    warn_after_seconds: float | None
    error_after_seconds: float | None
    filter: str | None
    in_manifest: bool | None
    error_message: NotRequired[str]


class SourceFreshnessAnswer(Paged):
    generated_at: str | None
    elapsed_seconds: float | None
    sources: list[SourceFreshness]
    total: int
    count_by_status: dict[str, int]
    results_not_in_manifest: int | None
    provenance: Provenance


# ---- dbt_find_select_star --------------------------------------------------------------------------------
class StarOccurrence(OpenShape):
    scope: Literal["final", "cte", "subquery"]
    cte_name: str | None
    qualifier: str | None
    selects_from: list[str]


class SelectStarModel(OpenShape):
    model_name: str | None
    node_id: str
    schema: str | None
    sql_source: Annotated[str, Field(description="compiled, compiled_last_build or raw_rendered")]
    parsed: bool
    occurrence_count: int
    occurrences: list[StarOccurrence]
    final_select_star: bool | None
    propagates_upstream_columns: bool | None
    compiled_sql_snippet: str


class SelectStarAnswer(Paged):
    models: Annotated[list[SelectStarModel], _spec_list("models that select a star, propagating ones first")]
    total: int
    propagating_total: int
    provenance: Provenance


# ---- dbt_get_column_lineage ------------------------------------------------------------------------------
class UpstreamColumn(OpenShape):
    node_id: str | None
    name: str | None
    relation: str
    column_name: str
    transformation: Literal["direct", "derived"]


class ColumnLineageAnswer(OpenShape):
    node_id: str
    model_name: str | None
    column_name: str
    sql_source: str
    dialect: str | None
    resolved: bool
    reason: str | None
    upstream: list[UpstreamColumn]
    provenance: Provenance


# ---- dbt-project: fs_* -----------------------------------------------------------------------------------
class Redactions(OpenShape):
    count: Annotated[
        int, Field(description="Values replaced by *** because they hold a credential or a key.")
    ]
    paths: Annotated[
        list[str], Field(description="Where: key paths in the parsed file (line N in text), never values.")
    ]
    parsed: Annotated[bool, Field(description="false: the text was scrubbed by shapes, not parsed.")]


class ModelSqlAnswer(OpenShape):
    model_name: str
    node_id: str | None
    compiled: bool
    compiled_source: Annotated[
        str | None,
        Field(description="target_compiled_file, manifest or last_build_manifest; null for raw SQL"),
    ]
    file_path: str | None
    sql: str
    line_count: int
    redactions: NotRequired[Redactions]
    last_modified: str | None
    provenance: Provenance


class YamlFileAnswer(OpenShape):
    file_path: str
    content: Annotated[Any, Field(description="The parsed YAML, credentials and keys replaced by ***.")]
    redactions: NotRequired[Redactions]
    last_modified: str
    provenance: Provenance


class ProjectConfigAnswer(OpenShape):
    file_path: str
    content: Annotated[
        dict[str, Any],
        Field(description="dbt_project.yml, parsed; Jinja left as written, credentials replaced by ***."),
    ]
    redactions: NotRequired[Redactions]
    last_modified: str
    provenance: Provenance


class ProjectModel(OpenShape):
    model_name: str | None
    file_path: str | None
    node_id: NotRequired[str]
    package: NotRequired[str | None]
    schema: NotRequired[str | None]
    materialization: NotRequired[str | None]
    tags: NotRequired[list[str]]
    description: NotRequired[str]


class ModelListAnswer(Paged):
    models: Annotated[
        list[ProjectModel],
        _spec_list(
            "the project's models (name and file only when listed from the files, without a manifest)"
        ),
    ]
    total: int
    provenance: Provenance


class Reference(OpenShape):
    model_name: str
    file_path: str
    reference_type: Annotated[str, Field(description="ref or source")]
    reference_expression: str
    line_number: int


class ReferencesAnswer(Paged):
    references: Annotated[list[Reference], _spec_list("one entry per ref() or source() call found")]
    total: int
    provenance: Provenance
