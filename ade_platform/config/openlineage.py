"""`openlineage:` events in (an endpoint on the gateway's HTTP server, files producers write) and out (ADE's own
lineage, runs and root-cause verdicts sent through the OpenLineage client's transports). docs/OPENLINEAGE.md."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, SecretStr, field_validator

from ade_platform.config.base import _Model, empty_is_none, long_enough_token


class OpenLineageReceive(_Model):
    enabled: bool = Field(False, description="Serve the OpenLineage endpoint on the gateway's HTTP server.")
    path: str = Field("/api/v1/lineage", description="Where producers POST events (Marquez's path).")
    token: Annotated[SecretStr | None, BeforeValidator(empty_is_none), AfterValidator(long_enough_token)] = (
        Field(
            None,
            description="Bearer token producers send (e.g. ${ADE_OPENLINEAGE_TOKEN}); the gateway's own token "
            "or OIDC sign-in is accepted too. Without any, only loopback callers are served.",
        )
    )
    files: list[Path] = Field(
        default_factory=list,
        description="Files or folders of JSON-lines events (the client's file transport) folded in as well.",
    )
    namespaces: dict[str, str] = Field(
        default_factory=dict,
        description="Dataset namespace -> warehouse name, where the namespace's scheme does not say which one.",
    )
    max_event_bytes: int = Field(1 << 20, ge=1024, le=16 << 20, description="Largest event accepted.")
    max_journal_events: int = Field(20_000, ge=10, description="Events kept in the store's journal.")
    max_jobs: int = Field(5_000, ge=1, description="Jobs kept by openlineage_events (least recent dropped).")
    max_runs_per_job: int = Field(20, ge=1, le=1000, description="Run states kept per job.")

    @field_validator("path")
    @classmethod
    def _absolute_path(cls, value: str) -> str:
        if not value.startswith("/") or value.startswith("/mcp") or value.startswith("/.well-known"):
            raise ValueError("must start with / and not be /mcp or /.well-known")
        return value


class OpenLineageEmit(_Model):
    transport: dict[str, Any] | None = Field(
        None,
        description="The OpenLineage client's transport config as its docs give it: {type: http, url, endpoint, "
        "auth}, {type: file, log_file_path, append}, {type: kafka, topic, config}. None: nothing is emitted.",
    )
    namespace: str = Field("ade", description="The job namespace of ADE's own events.")
    producer: str = Field(
        "https://github.com/ade-platform/ade-platform", description="The producer URI of ADE's events."
    )
    facet_schema_url: str | None = Field(
        None,
        description="Where ADE's custom facet schemas are published (docs/openlineage/); default: under the "
        "producer URI's main branch.",
    )
    namespaces: dict[str, str] = Field(
        default_factory=dict,
        description="Warehouse name -> the dataset namespace its tables are sent with (default <type>://<name>, "
        "bigquery for BigQuery).",
    )


class OpenLineageSettings(_Model):
    receive: OpenLineageReceive = Field(default_factory=OpenLineageReceive)
    emit: OpenLineageEmit = Field(default_factory=OpenLineageEmit)
