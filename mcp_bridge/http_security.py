"""What stands between an HTTP request and the gateway's tools: the Host/Origin guard and the bearer token.

- Host/Origin (ade_platform/lib/http_guard.py): a web page the user opens must not reach the gateway on
  loopback, by DNS rebinding (a foreign Host) or by a cross-site request (a foreign Origin). FastMCP ships a
  guard of its own (`host_origin_protection`), but it ignores the port, accepts any loopback Origin (a page
  served by another local program would pass) and answers 421; ours checks the port, trusts only the
  gateway's own origin and `mcp.http.allowed_origins`, answers 403, and is the one the emulators use too.
- Token: required off loopback; compared in constant time (FastMCP's StaticTokenVerifier is a dict lookup,
  whose timing depends on the token's hash and content).
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from fastmcp.server.auth import AccessToken, TokenVerifier
from starlette.middleware import Middleware

from ade_platform.config import ConfigError, Settings
from ade_platform.lib.http_guard import HostOriginGuard, HostPolicy, is_loopback, is_unspecified, local_policy

__all__ = ["SharedTokenVerifier", "host_policy", "http_auth", "http_options", "is_loopback"]

_HINT = (
    "Reach the gateway as 127.0.0.1, localhost or [::1] with its port, or add the name to "
    "mcp.http.allowed_hosts (a browser origin to mcp.http.allowed_origins)."
)


class SharedTokenVerifier(TokenVerifier):
    """Accepts exactly the configured token, compared in constant time: digests of equal length, so neither
    the content nor the length of the configured token shows in how long a wrong guess takes."""

    def __init__(self, token: str):
        super().__init__()
        self._expected = hashlib.sha256(token.encode()).digest()

    async def verify_token(self, token: str) -> AccessToken | None:
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        if not hmac.compare_digest(digest, self._expected):
            return None
        return AccessToken(token=token, client_id="ade", scopes=[])


def http_auth(settings: Settings, host: str) -> SharedTokenVerifier | None:
    """Bearer-token auth for HTTP: required off loopback; used on loopback too when a token is set."""
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


def http_options(settings: Settings, host: str, port: int) -> dict[str, Any]:
    """Keyword arguments for FastMCP's `run(transport="http")` / `http_app()`: our guard in front of every
    route, FastMCP's own guard off (one allow-list, one answer)."""
    policy = host_policy(settings, host, port)
    return {"middleware": [Middleware(HostOriginGuard, policy=policy)], "host_origin_protection": False}
