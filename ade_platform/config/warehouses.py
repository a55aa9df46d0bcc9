"""`warehouses:` each warehouse by name (DuckDB, Snowflake, BigQuery) and the freshness Dagster checks on it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr

from ade_platform.config.base import _Model


class FreshnessTarget(_Model):
    table: str = Field(description="[database.]schema.table whose freshness Dagster checks.")
    column: str = Field(description="The DATE/TIMESTAMP column whose newest value dates the table.")
    warn_after_hours: float | None = Field(None, gt=0)
    error_after_hours: float = Field(24, gt=0)


class DuckDBWarehouse(_Model):
    type: Literal["duckdb"]
    path: Path
    schemas: list[str] = Field(default_factory=list, description="Schemas to snapshot; empty = all.")
    hold_seconds: float = Field(
        0.5,
        ge=0,
        le=60,
        description=(
            "How long a reader keeps the file attached after a query, so the next query of a burst skips "
            "re-reading the catalog. The platform's writers take it over at once; a writer outside the "
            "platform (a dbt run in a shell) can meet DuckDB's lock for this long. 0 = attach per query."
        ),
    )
    freshness: list[FreshnessTarget] = Field(default_factory=list)


class SnowflakeWarehouse(_Model):
    type: Literal["snowflake"]
    account: str
    user: str
    password: SecretStr | None = None
    database: str | None = None
    warehouse: str | None = None
    role: str | None = None
    schemas: list[str] = Field(default_factory=list)
    host: str | None = None
    port: int | None = None
    protocol: Literal["https", "http"] = "https"
    freshness: list[FreshnessTarget] = Field(default_factory=list)


class BigQueryWarehouse(_Model):
    type: Literal["bigquery"]
    project: str
    datasets: list[str] = Field(default_factory=list)
    location: str | None = None
    credentials_path: Path | None = None
    api_endpoint: str | None = None
    freshness: list[FreshnessTarget] = Field(default_factory=list)


Warehouse = Annotated[DuckDBWarehouse | SnowflakeWarehouse | BigQueryWarehouse, Field(discriminator="type")]
