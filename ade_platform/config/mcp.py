"""`mcp:` the gateway: toolsets, live modes, tool names, HTTP; `limits:` the bounds of its answers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from ade_platform.config.access import AccessSettings, AuthMode, OidcSettings
from ade_platform.config.base import _Model, empty_is_none
from ade_platform.config.toolsets import TOOLSETS


class LimitSettings(_Model):
    max_lineage_nodes: int = Field(500, ge=1)
    max_rows: int = Field(1000, ge=1)
    query_timeout_seconds: float = Field(120, gt=0, description="The spec's default: 120 s.")


MIN_TOKEN_LENGTH = 32


class HttpSettings(_Model):
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    auth: AuthMode = Field(
        "token",
        description="token: one shared bearer token (`token`); oidc: each caller signs in at the identity "
        "provider (`oidc`), and `mcp.access` says what they may do.",
    )
    oidc: OidcSettings | None = None
    token: SecretStr | None = Field(
        None,
        description=f"Bearer token (at least {MIN_TOKEN_LENGTH} characters); required unless bound to loopback.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values served besides 127.0.0.1, localhost and [::1] with the port: the names "
        "clients reach the gateway by (`name` on any port, `name:port`). Required when bound to 0.0.0.0.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins (http(s)://host[:port]) allowed to call the gateway; any other Origin is "
        "refused (403). Requests without an Origin (non-browser clients) are not affected.",
    )

    @field_validator("token", mode="before")
    @classmethod
    def _empty_token_is_none(cls, value: Any) -> Any:
        return empty_is_none(value)

    @field_validator("token")
    @classmethod
    def _token_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_TOKEN_LENGTH:
            raise ValueError(f"must be at least {MIN_TOKEN_LENGTH} characters (e.g. `openssl rand -hex 24`)")
        return value

    @field_validator("allowed_hosts", "allowed_origins")
    @classmethod
    def _allow_list_parses(cls, value: list[str], info: ValidationInfo) -> list[str]:
        from ade_platform.lib.http_guard import normalize_origin, parse_host

        if info.field_name == "allowed_hosts":
            parse, form = parse_host, "host names (name, name:port or [v6]:port)"
        else:
            parse, form = normalize_origin, "origins (http(s)://host[:port], no path)"
        bad = [entry for entry in value if parse(entry) is None]
        if bad:
            raise ValueError(f"{bad} are not {form}")
        return value

    @model_validator(mode="after")
    def _one_way_to_sign_in(self) -> HttpSettings:
        if self.auth == "oidc" and self.oidc is None:
            raise ValueError("auth: oidc needs an oidc: section (at least its issuer)")
        if self.auth == "oidc" and self.token is not None:
            raise ValueError("auth: oidc signs callers in at the identity provider; remove token")
        return self


class McpSettings(_Model):
    toolsets: list[str] = Field(default_factory=lambda: list(TOOLSETS))
    fast_read_only_live: bool = Field(
        True,
        description="Read-only live tools run in-process and record their audit run in the background.",
    )
    fast_workspace_live: bool = Field(
        True,
        description="Live tools whose only effects are workspace files (snowfakery.run_recipe without dburl) "
        "run in-process; their audit run follows, made durable by an fsynced intent in the audit journal.",
    )
    tool_names: Literal["spec", "portable"] = Field(
        "spec",
        description="spec: tool names exactly as the specs write them (some contain dots); portable: dots "
        "become underscores, for hosts whose model APIs only accept [A-Za-z0-9_-] in tool names.",
    )
    max_staleness_seconds: float | None = Field(None, gt=0, description="Answers older than this say stale.")
    observations_per_key: int = Field(
        50, ge=1, le=10_000, description="Changes kept per observed object (a tile, a table, a job's runs)."
    )
    observation_keys: int = Field(
        5_000,
        ge=1,
        le=1_000_000,
        description="Observed objects kept in all (the least recently seen go first).",
    )
    http: HttpSettings = Field(default_factory=HttpSettings)
    access: AccessSettings = Field(default_factory=AccessSettings)

    @field_validator("toolsets")
    @classmethod
    def _known_toolsets(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(TOOLSETS))
        if unknown:
            raise ValueError(f"unknown toolset(s) {unknown}; choose from {list(TOOLSETS)}")
        return value
