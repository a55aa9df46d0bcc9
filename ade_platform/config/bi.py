"""`bi:` the bi-api toolset and the BI assets: Looker and Metabase instances and the limits of their calls."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator

from ade_platform.config.base import _Model, empty_is_none


class LookerSettings(_Model):
    """A Looker instance, reached through looker-sdk (API 4.0) with an API key's client id and secret."""

    base_url: str = Field(
        description="The instance URL the API is served from, e.g. https://acme.looker.com."
    )
    client_id: SecretStr = Field(description="API key client id, as a ${ENV} reference.")
    client_secret: SecretStr = Field(description="API key client secret, as a ${ENV} reference.")
    verify_ssl: bool = True

    @field_validator("client_id", "client_secret")
    @classmethod
    def _not_empty(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value():
            raise ValueError("must not be empty (is its environment variable set?)")
        return value


class MetabaseSettings(_Model):
    """A Metabase instance, reached over its REST API with an API key (preferred) or a user session."""

    base_url: str = Field(description="The instance URL, e.g. https://metabase.acme.com.")
    api_key: SecretStr | None = Field(None, description="Sent as X-API-KEY; a ${ENV} reference.")
    username: str | None = Field(None, description="For POST /api/session when no api_key is set.")
    password: SecretStr | None = None

    @field_validator("api_key", "password", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return empty_is_none(value)

    @model_validator(mode="after")
    def _some_credentials(self) -> MetabaseSettings:
        if self.api_key is None and not (self.username and self.password):
            raise ValueError("set api_key, or username and password")
        return self


class BiSettings(_Model):
    """The bi-api toolset and the BI assets. A tool whose base_url is empty is not configured (so the demo's
    `${ADE_LOOKER_URL:-}` leaves it off when no emulator runs)."""

    looker: LookerSettings | None = None
    metabase: MetabaseSettings | None = None
    warehouse: str | None = Field(
        None,
        description="The warehouse the dashboards read (names tables, compares row counts); default: dbt's.",
    )
    timeout_seconds: float = Field(30, gt=0, le=600, description="Timeout of one API call.")
    tile_timeout_seconds: float = Field(60, gt=0, le=3600, description="Timeout of running one tile.")
    max_concurrency: int = Field(4, ge=1, le=32, description="Tiles run at once by the row-count checks.")
    sensor_interval_seconds: int = Field(300, ge=30, description="How often the dashboard-error sensor runs.")
    max_rows: int = Field(
        100,
        ge=1,
        le=5000,
        description="Rows bi_run_look returns at most (`truncated` says when there were more).",
    )
    run_look: Literal["rows", "shape"] = Field(
        "rows",
        description="rows: bi_run_look returns rows, PII-like or dbt-tagged columns and tables the Snowflake exclusions name "
        "masked; shape: only columns, types, row count and null percentages (no value at all).",
    )

    @field_validator("looker", "metabase", mode="before")
    @classmethod
    def _unset_when_no_url(cls, value: Any) -> Any:
        if isinstance(value, dict) and not value.get("base_url"):
            return None
        return value

    @property
    def tools(self) -> list[str]:
        """The configured BI tools, in a stable order."""
        return [name for name in ("looker", "metabase") if getattr(self, name) is not None]
