"""Output shapes of the lineage toolset: lineage_trace, lineage_explain_incident, lineage_what_changed."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field, with_config
from typing_extensions import TypedDict

from ade_platform.lib.lineage.conditions import CAUSES
from ade_platform.lib.shapes import OPEN, OpenShape
from mcp_bridge.toolsets.schemas.paging import GraphSummary, Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance

Cause = Literal[CAUSES]  # type: ignore[valid-type]


class JoinedAsset(OpenShape):
    asset: str
    version: str
    materialized_at: str
    age_seconds: float


class LiveStamp(OpenShape):
    run_id: Annotated[str, Field(description="The audited Dagster run of the live probes.")]
    elapsed_ms: float
    budget_ms: float


class LineageProvenance(Provenance):
    """The graph snapshot the answer walked, every run-level snapshot it joined, and the live probes."""

    source: Annotated[  # type: ignore[misc]  (narrower than the root's)
        Literal["cache", "live"],
        Field(description="live: the symptom and the nearest hops were probed now; cache: snapshots only."),
    ]
    asset: str
    version: str
    materialized_at: str
    age_seconds: float
    run_id: str | None
    stale: bool
    stale_reason: str | None
    joined: Annotated[
        list[JoinedAsset], Field(description="Every run-level asset whose newest snapshot was joined.")
    ]
    live: NotRequired[LiveStamp]


class TraceNode(OpenShape):
    id: Annotated[str, Field(description="<system>:<kind>:<key>")]
    kind: str
    name: str | None
    system: str | None
    direction: Literal["start", "upstream", "downstream", "built"]
    depth: int
    status: Literal["ok", "warn", "failed", "stale", "drifted", "unknown"]
    health: dict[str, Any] | None
    built_by: Annotated[
        list[dict[str, Any]],
        Field(description="Jobs/DAGs that build this dbt node, and how that was inferred."),
    ]


TraceEdge = with_config(OPEN)(
    TypedDict(
        "TraceEdge",
        {
            "from": str,
            "to": str,
            "kind": Annotated[
                str, Field(description="feeds, materializes, reads, shown_on, same_object, builds")
            ],
            "how": Annotated[
                str, Field(description="manifest, relation_match, sql_parse, selector, config, ...")
            ],
        },
    )
)


class TraceAnswer(Paged):
    start: str
    direction: str
    nodes: list[TraceNode]
    edges: list[TraceEdge]
    total_nodes: int
    unresolved: Annotated[
        list[dict[str, Any]],
        Field(description="What could not be linked on this chain, and why (for this page's nodes)."),
    ]
    summary: NotRequired[GraphSummary]
    provenance: LineageProvenance


class Onset(OpenShape):
    first_seen_at: Annotated[str | None, Field(description="First record of the current run that shows it.")]
    last_absent_at: Annotated[
        str | None, Field(description="The newest record before it where it did not hold.")
    ]
    at_or_before: Annotated[bool, Field(description="The oldest retained record already shows it.")]
    from_: Annotated[str, Field(alias="from", description="live, or the asset whose history dated it.")]


class EvidenceSource(OpenShape):
    source: Annotated[
        Literal["live", "cache", "observation", "git", "none"],
        Field(
            description="live: read now; cache: a store snapshot (asset, version, age); observation: what a live "
            "tool recorded; git: the dbt project's history."
        ),
    ]
    observed_at: NotRequired[str | None]
    asset: NotRequired[str]
    version: NotRequired[str]
    materialized_at: NotRequired[str | None]
    age_seconds: NotRequired[float]


class CauseEntry(OpenShape):
    rank: int
    cause: Cause
    node: str
    name: str | None
    system: str | None
    hops_from_symptom: int
    score: float
    object: Annotated[str, Field(description="What changed: a table column, a model, a source, a job.")]
    change: Annotated[
        str, Field(description="How it changed: renamed to ..., dropped, failed, stopped loading.")
    ]
    summary: str
    explains_symptom: Annotated[bool, Field(description="It accounts for the symptom's own error.")]
    explanation: str | None
    background: Annotated[bool, Field(description="It already held while the symptom was healthy.")]
    background_reason: str | None
    onset: Onset
    evidence_source: EvidenceSource
    evidence: dict[str, Any]
    next_tool: Annotated[
        dict[str, Any], Field(description="The tool (and arguments) that confirms this cause.")
    ]


class SymptomOnset(OpenShape):
    failing_since: str | None
    last_healthy_at: str | None


class Symptom(OpenShape):
    node: str
    name: str | None
    kind: str | None
    system: str | None
    status: Annotated[str, Field(description="error, empty, failed, missing, stale, ok or unknown.")]
    error: str | None
    error_kind: Annotated[
        str | None,
        Field(
            description="missing_column, missing_relation, type_mismatch, permission, timeout, syntax, empty, other"
        ),
    ]
    columns: Annotated[list[str], Field(description="Columns the error names.")]
    relations: Annotated[list[str], Field(description="Relations the error names.")]
    observed: EvidenceSource
    onset: SymptomOnset
    tiles: NotRequired[list[dict[str, Any]]]


class LiveReport(OpenShape):
    elapsed_ms: float
    not_reached: Annotated[
        list[dict[str, Any]], Field(description="Probes the budget (lineage.live_budget_ms) did not reach.")
    ]
    failed: Annotated[list[dict[str, Any]], Field(description="Probes that could not read (error code).")]


class IncidentAnswer(OpenShape):
    symptom: Symptom
    causes: list[CauseEntry]
    verdict: str
    confidence: Literal["high", "medium", "low", "none"]
    confident: Annotated[
        bool, Field(description="high or medium: a cause that is new or explains the error leads.")
    ]
    chain_nodes: int
    truncated: bool
    live: LiveReport
    provenance: LineageProvenance


class ChangeEvent(OpenShape):
    at: Annotated[str | None, Field(description="When it happened (or was first recorded).")]
    kind: Annotated[
        str,
        Field(
            description="schema_change, dbt_run, dbt_invocation, builder_run, freshness, bi_health, git_commit, "
            "value_change (a relation's values against its baseline profile)"
        ),
    ]
    node: str | None
    object: str
    change: str
    source: EvidenceSource
    detail: dict[str, Any]


class WhatChangedAnswer(Paged):
    start: str
    since: str
    events: list[ChangeEvent]
    total_events: int
    chain_nodes: int
    notes: Annotated[list[str], Field(description="What could not be read (no git repository, budget, ...).")]
    live: LiveReport
    provenance: LineageProvenance
