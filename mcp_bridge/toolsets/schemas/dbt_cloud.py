"""Output shapes of the dbt-cloud toolset (agent-toolset spec category 3), with the spec's field names.

Values dbt Cloud may leave empty (a run not started yet, a job without schedule) are nullable; an artifact's
content is dbt's own JSON, kept as an object.
"""

from __future__ import annotations

from typing import Annotated, Any

from ade_platform.lib.shapes import OpenShape
from mcp_bridge.toolsets.schemas.dbt import _spec_list
from mcp_bridge.toolsets.schemas.paging import Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance


# ---- dbtcloud_trigger_job ----------------------------------------------------------------------------------
class TriggerAnswer(OpenShape):
    run_id: int
    job_id: int
    status: str
    created_at: str | None
    href: str | None
    cause: str
    steps_override: list[str] | None
    provenance: Provenance


# ---- dbtcloud_poll_run -------------------------------------------------------------------------------------
class StepAnswer(OpenShape):
    index: int | None
    name: str
    status: str
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None


class PollAnswer(OpenShape):
    run_id: int
    job_id: int | None
    status: str
    status_message: str | None
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None
    steps: list[StepAnswer]
    timed_out: bool
    status_checks: int
    waited_seconds: float
    href: str | None
    provenance: Provenance


# ---- dbtcloud_get_last_run ---------------------------------------------------------------------------------
class LastRunAnswer(OpenShape):
    run_id: int
    job_id: int
    status: str
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None
    triggered_by: str | None
    cause: str | None
    git_sha: str | None
    status_message: str | None
    href: str | None
    started_by_agent: bool
    steps_override: list[str] | None
    provenance: Provenance


# ---- dbtcloud_fetch_artifact -------------------------------------------------------------------------------
class ArtifactAnswer(OpenShape):
    artifact: str
    run_id: int
    fetched_at: str
    size_bytes: int
    truncated: bool
    content: dict[str, Any] | None
    # the JMESPath expression asked for and its value on the artifact (null without one, or over the cap)
    query: str | None
    result: Any
    summary: dict[str, Any] | None
    resource_uri: str
    # the dbt-artifacts tools that answer from this very file (dbt_cloud.dbt_tools_job); empty when none does
    dbt_tools: list[str]
    provenance: Provenance


# ---- dbtcloud_list_jobs ------------------------------------------------------------------------------------
class JobEntry(OpenShape):
    job_id: int
    name: str | None
    environment_id: int | None
    environment_name: str | None
    schedule_enabled: bool
    cron: str | None
    steps: list[str]
    generate_docs: bool
    run_source_freshness: bool
    tracked: bool


class JobsAnswer(Paged):
    project_id: int
    environment_id: int | None
    jobs: Annotated[list[JobEntry], _spec_list("the project's jobs")]
    count: int
    total: int
    provenance: Provenance


# ---- dbtcloud_get_source_freshness -------------------------------------------------------------------------
class SourceFreshness(OpenShape):
    unique_id: str
    source_name: str | None
    table_name: str | None
    status: str | None
    max_loaded_at: str | None
    snapshotted_at: str | None
    age_seconds: float | None
    error: str | None


class FreshnessAnswer(Paged):
    job_id: int
    run_id: int
    run_status: str
    run_finished_at: str | None
    sources: list[SourceFreshness]
    total: int
    provenance: Provenance
