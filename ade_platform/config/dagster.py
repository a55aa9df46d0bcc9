"""`dagster:` the Dagster instance behind materializations and live tools, and `schedules:` its schedules."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ade_platform.config.base import _Model


class DagsterInstanceSettings(_Model):
    """The Dagster instance behind materializations and live tools (dagster.yaml is written from this)."""

    storage: Literal["sqlite", "postgres"] = Field(
        "sqlite",
        description="sqlite: files under DAGSTER_HOME (one machine); postgres: runs, events, schedules.",
    )
    postgres_url_env: str = Field(
        "ADE_DAGSTER_PG_URL",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The environment variable holding postgresql://user:password@host:port/db; dagster.yaml "
        "names the variable, never the URL, so no password is written to disk.",
    )
    max_concurrent_runs: int = Field(
        1, ge=1, le=1000, description="1 for the embedded DuckDB warehouse (one writer); raise on Postgres."
    )


class ScheduleSettings(_Model):
    metadata_cron: str = Field("0 * * * *", description="Cron of the metadata refresh schedule.")
    timezone: str = "UTC"
