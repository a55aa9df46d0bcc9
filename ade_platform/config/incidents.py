"""`incidents:` incidents as objects: how often detection runs, how they group, their bounds, and the webhooks
that tell people (docs/INCIDENTS.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, SecretStr

from ade_platform.config.base import _Model

WebhookEvent = Literal["opened", "reopened", "resolved", "not_an_incident", "acknowledged"]


class IncidentWebhook(_Model):
    url: SecretStr = Field(description="Where to POST; a ${ENV} reference (its path may hold a secret).")
    secret: SecretStr | None = Field(
        None, description="HMAC-SHA256 key of the X-ADE-Signature header; a ${ENV} reference."
    )
    format: Literal["json", "slack"] = Field("json", description="json: the incident; slack: {text, blocks}.")
    events: list[WebhookEvent] = Field(default_factory=lambda: ["opened", "reopened", "resolved"])
    timeout_seconds: float = Field(5.0, gt=0, le=60)
    retries: int = Field(4, ge=0, le=10, description="Retries after the first attempt, with backoff.")


class IncidentSettings(_Model):
    enabled: bool = Field(True, description="Run detection (the incidents sensor) in the Dagster daemon.")
    interval_seconds: int = Field(30, ge=10, le=86_400, description="How often detection reads the store.")
    grouping_window_seconds: float = Field(
        600.0, ge=0, description="A cause that clears and returns within it is a flap: counted, not pushed."
    )
    max_open: int = Field(50, ge=1, le=10_000, description="Open incidents at most; new causes past it wait.")
    max_symptoms: int = Field(200, ge=1, le=5_000, description="Unhealthy nodes explained per detection.")
    max_listeners: int = Field(64, ge=1, le=10_000, description="Push listeners per gateway.")
    listener_backlog: int = Field(
        64, ge=1, le=10_000, description="Unsent pushes before a listener is dropped."
    )
    poll_seconds: float = Field(1.0, gt=0, le=60, description="How often a gateway looks at the journal.")
    monitor_assets: list[str] = Field(
        default_factory=list,
        description="Assets the incidents sensor refreshes every interval (bi_health_<tool>, warehouse_schema_<wh>, "
        "dbt_sources): what makes a change noticed within an interval. Each refresh queries the systems.",
    )
    webhooks: list[IncidentWebhook] = Field(default_factory=list)
