"""`dbt_cloud:` one dbt Cloud account, reached through the Administrative API v2."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, SecretStr, field_validator

from ade_platform.config.base import _Model


class DbtCloudSettings(_Model):
    """The dbt-cloud toolset and its assets: one dbt Cloud account reached through the Administrative API v2."""

    base_url: str = Field(
        "https://cloud.getdbt.com/api/v2", description="API base URL, ending in /api/v2 (per region/tenant)."
    )
    account_id: int = Field(ge=1, description="dbt Cloud account id.")
    api_token: SecretStr = Field(description="Service token (read + job run scope); a ${ENV} reference.")
    project_id: int | None = Field(
        None, ge=1, description="Default project (the job inventory asset lists it)."
    )
    environment_id: int | None = Field(None, ge=1, description="Default environment filter of the inventory.")
    tracked_jobs: list[int] = Field(
        default_factory=list, description="Job ids whose runs and artifacts Dagster snapshots into the store."
    )
    dbt_tools_job: int | None = Field(
        None,
        ge=1,
        description="A tracked job whose latest run's artifacts feed the dbt-artifacts tools (the dbt_manifest, "
        "dbt_run_results, ... slots) instead of a local dbt project.",
    )
    poll_interval_seconds: float = Field(
        10, gt=0, le=300, description="dbtcloud_poll_run's status check period."
    )
    recent_runs: int = Field(20, ge=1, le=500, description="Runs per tracked job kept in dbt_cloud_runs.")
    timeout_seconds: float = Field(30, gt=0, le=600, description="Read timeout of one API request.")
    max_artifact_bytes: int = Field(
        200_000,
        ge=1024,
        description="Largest artifact inlined by dbtcloud_fetch_artifact; past it, a summary.",
    )
    sensor_interval_seconds: int = Field(60, ge=10, description="How often the failed-run sensor polls.")
    triggerable_jobs: list[int] | None = Field(
        None,
        description="Jobs dbtcloud_trigger_job may start (others: trigger_not_allowed); default: tracked_jobs.",
    )
    allow_steps_override: bool = Field(
        True,
        description="Whether dbtcloud_trigger_job takes steps_override, always under the dbt command policy "
        "(ade_platform/lib/dbt/command_policy.py); false refuses every override.",
    )
    allow_full_refresh: bool = Field(
        False, description="Whether an agent's steps_override may pass --full-refresh."
    )

    def triggerable(self) -> list[int]:
        return list(self.tracked_jobs if self.triggerable_jobs is None else self.triggerable_jobs)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an http(s) URL such as https://cloud.getdbt.com/api/v2")
        return value.rstrip("/")

    @field_validator("dbt_tools_job")
    @classmethod
    def _feeding_job_tracked(cls, value: int | None, info: Any) -> int | None:
        if value is not None and value not in (info.data.get("tracked_jobs") or []):
            raise ValueError("must be one of tracked_jobs (its runs are what Dagster snapshots)")
        return value
