"""`profiles:` data profiles of the relations dbt builds, and the monitors on them (issue 33, items 2 and 4)."""

from __future__ import annotations

from pydantic import Field

from ade_platform.config.base import _Model


class ProfileSettings(_Model):
    enabled: bool = Field(
        True, description="Profile the dbt warehouse's relations after builds and on schedule."
    )
    schedule_cron: str | None = Field(
        "15 5 * * *",
        description="Cron of the scheduled profile run (the monitors learn from daily points); off if null.",
    )
    max_relations: int = Field(
        2000, ge=1, description="Relations profiled per run (the rest are said, not profiled)."
    )
    budget_seconds: float = Field(
        900,
        gt=0,
        description="Wall-clock budget of one profile run; relations left when it is spent are skipped.",
    )
    mix_bound: int = Field(
        20,
        ge=1,
        le=200,
        description="A column with at most this many distinct values gets its value mix profiled.",
    )
