"""Output shapes of the dbt-cloud toolset (agent-toolset spec category 3), with the spec's field names.

Values dbt Cloud may leave empty (a run not started yet, a job without schedule) are nullable; an artifact's
content is dbt's own JSON, kept as an object.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypedDict

from ade_platform.lib.shapes import OPEN
from mcp_bridge.toolsets.schemas.paging import Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance


# ---- dbtcloud_trigger_job ----------------------------------------------------------------------------------
class TriggerAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    run_id: int
    job_id: int
    status: str
    created_at: str | None
    href: str | None
    cause: str
    steps_override: list[str] | None
    provenance: Provenance


# ---- dbtcloud_poll_run -------------------------------------------------------------------------------------
class StepAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    index: int | None
    name: str
    status: str
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None


class PollAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
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
class LastRunAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
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
class ArtifactAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    artifact: str
    run_id: int
    fetched_at: str
    size_bytes: int
    truncated: bool
    content: dict[str, Any] | None
    summary: dict[str, Any] | None
    resource_uri: str
    provenance: Provenance


# ---- dbtcloud_list_jobs ------------------------------------------------------------------------------------
class JobEntry(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
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
    __pydantic_config__ = OPEN  # type: ignore[misc]
    project_id: int
    environment_id: int | None
    jobs: list[JobEntry]
    count: int
    total: int
    provenance: Provenance


# ---- dbtcloud_get_source_freshness -------------------------------------------------------------------------
class SourceFreshness(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    unique_id: str
    source_name: str | None
    table_name: str | None
    status: str | None
    max_loaded_at: str | None
    snapshotted_at: str | None
    age_seconds: float | None
    error: str | None


class FreshnessAnswer(Paged):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    job_id: int
    run_id: int
    run_status: str
    run_finished_at: str | None
    sources: list[SourceFreshness]
    total: int
    provenance: Provenance
