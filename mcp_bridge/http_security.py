"""What stands between an HTTP request and the gateway's tools: the Host/Origin guard, then the bearer token
(one shared token, or a signed-in caller's access token from the team's identity provider).

- Host/Origin (ade_platform/lib/http_guard.py): a web page the user opens must not reach the gateway on
  loopback, by DNS rebinding (a foreign Host) or by a cross-site request (a foreign Origin). FastMCP ships a
  guard of its own (`host_origin_protection`), but it ignores the port, accepts any loopback Origin (a page
  served by another local program would pass) and answers 421; ours checks the port, trusts only the
  gateway's own origin and `mcp.http.allowed_origins`, answers 403, and is the one the emulators use too.
- Token (`mcp.http.auth: token`): required off loopback; compared in constant time (FastMCP's
  StaticTokenVerifier is a dict lookup, whose timing depends on the token's hash and content).
- OIDC (`mcp.http.auth: oidc`): the gateway is an OAuth 2.1 resource server. FastMCP's JWTVerifier checks each
  access token's signature against the provider's JWKS (cached; fetched again for an unknown key id, at most once
  per `jwks_refresh_seconds`), its issuer, audience and expiry; FastMCP's RemoteAuthProvider publishes the
  protected-resource metadata (RFC 9728) and answers 401 with `WWW-Authenticate: Bearer resource_metadata=...`,
  from which an MCP host finds the provider and signs the user in. Nothing is kept between requests: replicas
  validate tokens independently.
- The guard runs before the token is looked at (FastMCP places `middleware=` after its auth middleware, so the
  providers below put the guard in front themselves).
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Any

from fastmcp.server.auth import AccessToken, AuthProvider, RemoteAuthProvider, TokenVerifier
from fastmcp.server.auth.providers.jwt import JWTVerifier
from starlette.middleware import Middleware
from starlette.routing import Route

from ade_platform.config import ConfigError, OidcSettings, Settings
from ade_platform.lib.http_guard import HostOriginGuard, HostPolicy, is_loopback, is_unspecified, local_policy
from mcp_bridge.access import SHARED_TOKEN_CLIENT

__all__ = [
    "OidcResourceServer",
    "OidcTokenVerifier",
    "SharedTokenVerifier",
    "host_policy",
    "http_auth",
    "http_options",
    "is_loopback",
]
MCP_PATH = "/mcp"
WELL_KNOWN = "/.well-known/oauth-protected-resource"
_NOT_BEFORE_LEEWAY = 60  # seconds of clock skew allowed on `nbf`

_HINT = (
    "Reach the gateway as 127.0.0.1, localhost or [::1] with its port, or add the name to "
    "mcp.http.allowed_hosts (a browser origin to mcp.http.allowed_origins)."
)


class _GuardFirst:
    """An auth provider whose middleware starts with the Host/Origin guard (set by `http_options`)."""

    guard: Middleware | None = None

    def get_middleware(self) -> list:
        return [*([self.guard] if self.guard is not None else []), *super().get_middleware()]  # type: ignore[misc]


class SharedTokenVerifier(_GuardFirst, TokenVerifier):
    """Accepts exactly the configured token, compared in constant time: digests of equal length, so neither
    the content nor the length of the configured token shows in how long a wrong guess takes."""

    def __init__(self, token: str):
        super().__init__()
        self._expected = hashlib.sha256(token.encode()).digest()

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        if not hmac.compare_digest(digest, self._expected):
            return None
        return AccessToken(token=token, client_id=SHARED_TOKEN_CLIENT, scopes=[])


class OidcTokenVerifier(JWTVerifier):
    """FastMCP's JWT checks (signature through the JWKS, issuer, audience, expiry), and two it leaves out: a
    token must expire (`exp` present) and must not be used before its `nbf`."""

    async def verify_token(self, token: str) -> AccessToken | None:
        access = await super().verify_token(token)
        if access is None:
            return None
        claims = access.claims
        if not isinstance(claims.get("exp"), int | float):
            return None
        not_before = claims.get("nbf")
        if isinstance(not_before, int | float) and not_before > time.time() + _NOT_BEFORE_LEEWAY:
            return None
        return access


class OidcResourceServer(_GuardFirst, RemoteAuthProvider):
    """The gateway as a protected resource of the identity provider. Its metadata (RFC 9728) is served where
    the RFC puts it for the /mcp resource (/.well-known/oauth-protected-resource/mcp) and at the bare well-known
    path that some MCP hosts try first."""

    def get_routes(self, mcp_path: str | None = None) -> list[Route]:
        routes = super().get_routes(mcp_path)
        path_scoped = f"{WELL_KNOWN}{mcp_path or ''}"
        for route in list(routes):
            if mcp_path and route.path == path_scoped:
                routes.append(Route(WELL_KNOWN, endpoint=route.endpoint, methods=["GET", "OPTIONS"]))
        return routes


def discover_jwks_uri(issuer: str) -> str:
    """The JWKS URL the issuer's discovery document names (OpenID Connect discovery, else RFC 8414); a
    ConfigError naming what failed when the provider cannot be read or names another issuer."""
    import httpx

    base = issuer.rstrip("/")
    scheme, _, rest = base.partition("://")
    host, _, path = rest.partition("/")
    candidates = [
        f"{base}/.well-known/openid-configuration",
        f"{scheme}://{host}/.well-known/oauth-authorization-server{'/' + path if path else ''}",
    ]
    failures = []
    for url in candidates:
        try:
            reply = httpx.get(url, timeout=10, follow_redirects=False)
            reply.raise_for_status()
            document = reply.json()
        except (httpx.HTTPError, ValueError) as exc:
            failures.append(f"{url}: {type(exc).__name__}")
            continue
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            raise ConfigError(
                f"mcp.http.oidc.issuer: {url} names the issuer {document.get('issuer')!r}, not {issuer!r}"
                if isinstance(document, dict)
                else f"mcp.http.oidc.issuer: {url} is not a discovery document"
            )
        if not isinstance(document.get("jwks_uri"), str):
            raise ConfigError(f"mcp.http.oidc: {url} names no jwks_uri; set mcp.http.oidc.jwks_uri")
        return document["jwks_uri"]
    raise ConfigError(
        f"mcp.http.oidc.issuer: cannot read the identity provider's discovery document ({'; '.join(failures)}); "
        "is the issuer right and reachable? (or set mcp.http.oidc.jwks_uri)"
    )


def resource_url(oidc: OidcSettings, host: str, port: int) -> str:
    """The protected resource: the gateway's MCP endpoint as clients reach it."""
    public = oidc.public_url or f"http://{f'[{host}]' if ':' in host else host}:{port}"
    return public + MCP_PATH


def oidc_auth(settings: Settings, host: str, port: int) -> OidcResourceServer:
    oidc = settings.mcp.http.oidc
    assert oidc is not None  # the settings check it
    resource = resource_url(oidc, host, port)
    verifier = OidcTokenVerifier(
        jwks_uri=oidc.jwks_uri or discover_jwks_uri(oidc.issuer),
        issuer=oidc.issuer,
        audience=oidc.audience or [resource],
        algorithm=oidc.algorithm,
        jwks_refresh_interval=oidc.jwks_refresh_seconds,
    )
    return OidcResourceServer(
        token_verifier=verifier,
        authorization_servers=[oidc.issuer],  # type: ignore[list-item]
        base_url=resource.removesuffix(MCP_PATH),
        scopes_supported=settings.mcp.access.advertised(),  # hosts request every scope advertised
        resource_name="ADE Platform",
    )


def http_auth(settings: Settings, host: str, port: int | None = None) -> AuthProvider | None:
    """How HTTP callers sign in. `auth: oidc`: at the identity provider (every request needs its access token).
    `auth: token`: the shared bearer token, required off loopback and used on loopback too when set."""
    if settings.mcp.http.auth == "oidc":
        return oidc_auth(settings, host, port or settings.mcp.http.port)
    token = settings.mcp.http.token
    if token is None:
        if not is_loopback(host):
            raise ConfigError(
                f"mcp.http.token: a bearer token is required to serve HTTP on {host} (not loopback); "
                "set ADE_MCP_TOKEN"
            )
        return None
    return SharedTokenVerifier(token.get_secret_value())


def host_policy(settings: Settings, host: str, port: int) -> HostPolicy:
    """The Host names and browser origins the gateway serves on host:port."""
    http = settings.mcp.http
    if is_unspecified(host) and not http.allowed_hosts:
        raise ConfigError(
            f"mcp.http.allowed_hosts: serving HTTP on {host} (every interface) needs the host names clients "
            "reach the gateway by (e.g. [mcp.example.com]); requests naming any other host are refused"
        )
    return local_policy(port, host, http.allowed_hosts, http.allowed_origins, hint=_HINT)


def http_options(
    settings: Settings, host: str, port: int, auth: AuthProvider | None = None
) -> dict[str, Any]:
    """Keyword arguments for FastMCP's `run(transport="http")` / `http_app()`: our guard in front of every
    route (and of `auth`'s token checks), FastMCP's own guard off (one allow-list, one answer)."""
    guard = Middleware(HostOriginGuard, policy=host_policy(settings, host, port))
    if isinstance(auth, _GuardFirst):
        auth.guard = guard
        return {"host_origin_protection": False}
    return {"middleware": [guard], "host_origin_protection": False}
