"""Who may call the gateway over HTTP and what each caller may do: `mcp.http.auth`, `mcp.http.oidc`, `mcp.access`.

`auth: token` is one shared bearer token (single-user setups). `auth: oidc` makes the gateway an OAuth 2.1 resource
server for the team's identity provider: each caller signs in there, and `mcp.access` maps the scopes and groups in
their access token to roles, each role a set of effects (read, trigger, ddl, workspace) on some toolsets.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from ade_platform.config.base import _Model
from ade_platform.config.toolsets import TOOLSETS

Effect = Literal["read", "trigger", "ddl", "workspace", "incident"]
EFFECTS: tuple[Effect, ...] = ("read", "trigger", "ddl", "workspace", "incident")
JwtAlgorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]


class OidcSettings(_Model):
    issuer: str = Field(
        description="The identity provider's issuer URL, exactly as its tokens' `iss` claim writes it "
        "(Keycloak: https://idp/realms/NAME; Okta: https://ORG.okta.com/oauth2/default; Entra ID: "
        "https://login.microsoftonline.com/TENANT/v2.0)."
    )
    jwks_uri: str | None = Field(
        None,
        description="Where the provider publishes its signing keys; default: read from the issuer's "
        "discovery document (/.well-known/openid-configuration) at start-up.",
    )
    public_url: str | None = Field(
        None,
        description="The gateway's URL as clients reach it (scheme://host[:port], e.g. https://ade.example.com); "
        "the protected resource is <public_url>/mcp. Default: http://<host>:<port>.",
    )
    audience: list[str] = Field(
        default_factory=list,
        description="Accepted `aud` values; default: the resource URL (<public_url>/mcp), which a provider "
        "puts there when the client asks for that resource (RFC 8707). Entra ID: api://<application id>.",
    )
    algorithm: JwtAlgorithm = Field("RS256", description="The signature algorithm of the provider's tokens.")
    jwks_refresh_seconds: float = Field(
        30,
        ge=0,
        le=3600,
        description="At most one JWKS fetch per this many seconds for a token signed with an unknown key "
        "(a rotated key is picked up at the first token that uses it, once this has passed).",
    )
    user_claim: str = Field("sub", description="The claim that names the user in audit runs (`ade/user`).")
    groups_claim: str = Field(
        "groups", description="The claim listing the caller's groups (Entra ID app roles: `roles`)."
    )

    @field_validator("issuer", "jwks_uri", "public_url")
    @classmethod
    def _http_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError(f"{value!r} is not an http(s) URL")
        # The issuer is compared with `iss` exactly (Auth0's ends with a slash); the gateway's URL gets /mcp.
        return value.rstrip("/") if value is not None and info.field_name == "public_url" else value


class Role(_Model):
    effects: list[Effect] = Field(
        description="What the role may do: read, trigger, ddl, workspace, incident (change an incident's status)."
    )
    toolsets: list[str] | None = Field(None, description="Only these toolsets; default: every enabled one.")


class CallerLimits(_Model):
    live_calls_per_minute: int | None = Field(
        60, ge=1, description="Calls of live tools per caller in any 60 s (null: no limit)."
    )
    concurrent_live_calls: int | None = Field(
        4, ge=1, description="Live tool calls one caller may have running at once (null: no limit)."
    )
    # CPU-heavy reads (agent patterns, the Snowfakery sandbox) run on the gateway's own cores; these hold over
    # every transport (stdio and the shared token are one caller each), unlike the live-call limits above.
    heavy_calls_per_minute: int | None = Field(
        120,
        ge=1,
        description="Calls of CPU-heavy tools (pattern search, the Snowfakery sandbox) per caller in any 60 s, "
        "over every transport (null: no limit).",
    )
    concurrent_heavy_calls: int | None = Field(
        2,
        ge=1,
        description="CPU-heavy tool calls one caller may have running at once, over every transport "
        "(null: no limit).",
    )


BUILTIN_ROLES: dict[str, Role] = {
    "reader": Role(effects=["read"]),
    "operator": Role(effects=["read", "trigger", "incident"]),
    "admin": Role(effects=list(EFFECTS)),
}
DEFAULT_SCOPES: dict[str, list[str]] = {
    "ade:read": ["reader"],
    "ade:operate": ["operator"],
    "ade:admin": ["admin"],
}


class AccessSettings(_Model):
    """What a signed-in caller may do (auth: oidc). Roles `reader`, `operator` and `admin` exist out of the box
    and can be redefined; `scopes` and `groups` name the roles each token scope and group grants."""

    roles: dict[str, Role] = Field(default_factory=lambda: dict(BUILTIN_ROLES))
    scopes: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_SCOPES.items()},
        description="Token scope -> roles it grants (default: ade:read reader, ade:operate operator, "
        "ade:admin admin).",
    )
    groups: dict[str, list[str]] = Field(default_factory=dict, description="Group (groups claim) -> roles.")
    default_roles: list[str] = Field(
        default_factory=list, description="Roles of every signed-in caller, whatever its scopes and groups."
    )
    limits: CallerLimits = Field(default_factory=CallerLimits)
    advertised_scopes: list[str] | None = Field(
        None,
        description="The scopes the sign-in metadata advertises (`scopes_supported`); MCP hosts request every "
        "one advertised, so an operator or admin scope listed here lands in every user's token request. "
        "Default: the scopes whose roles only read.",
    )

    def advertised(self) -> list[str]:
        """`scopes_supported` of the protected-resource metadata: as configured, else the read-only scopes."""
        if self.advertised_scopes is not None:
            return sorted(set(self.advertised_scopes))
        return sorted(
            scope
            for scope, grants in self.scopes.items()
            if grants and all(set(self.roles[name].effects) <= {"read"} for name in grants)
        )

    @field_validator("roles", mode="before")
    @classmethod
    def _builtin_roles_stay(cls, value: object) -> object:
        # A configured role of a built-in name redefines it; the others stay.
        if isinstance(value, dict):
            return {**BUILTIN_ROLES, **value}
        return value

    @model_validator(mode="after")
    def _roles_exist(self) -> AccessSettings:

        named = {*self.default_roles}
        for grants in (*self.scopes.values(), *self.groups.values()):
            named.update(grants)
        unknown = sorted(named - set(self.roles))
        if unknown:
            raise ValueError(f"unknown role(s) {unknown}; define them under mcp.access.roles")
        for name, role in self.roles.items():
            bad = sorted(set(role.toolsets or ()) - set(TOOLSETS))
            if bad:
                raise ValueError(
                    f"roles.{name}.toolsets: unknown toolset(s) {bad}; choose from {list(TOOLSETS)}"
                )
        return self


AuthMode = Literal["token", "oidc"]
