"""`lineage:` the cross-stack lineage: which jobs build which dbt nodes, and the default size of a trace."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from ade_platform.config.base import _Model


class LineageBuilder(_Model):
    """A job/DAG/deployment that builds dbt nodes, where its API does not reveal its dbt command."""

    system: str = Field(description="dbt_cloud, airflow, prefect, dagster, or any name of your own.")
    job: str = Field(description="The job id or name, DAG id, or flow/deployment name.")
    select: list[str] = Field(default_factory=list, description="dbt selectors (as after --select).")
    exclude: list[str] = Field(default_factory=list, description="dbt selectors (as after --exclude).")

    @field_validator("select", "exclude", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value


class LineageSettings(_Model):
    builders: list[LineageBuilder] = Field(default_factory=list)
    max_nodes: int = Field(300, ge=1, description="Default node cap of a cross-stack trace.")
    live_budget_ms: int = Field(
        1500,
        ge=0,
        le=60_000,
        description="Time the incident tools spend probing the chain live (closest hops first); 0: snapshots only.",
    )
