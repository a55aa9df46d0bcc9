"""Host and Origin checks for our HTTP servers (the MCP gateway, the SaaS emulators).

A server on 127.0.0.1 is reachable from any web page the user opens: through DNS rebinding (a name the attacker
controls resolves to 127.0.0.1, so the browser sends `Host: attacker.example:PORT`) or by a plain cross-site
request (the browser sends `Origin: http://attacker.example`). A request is served only when its Host names
this server (a loopback name with the serving port, the address it is bound to, or a configured name) and, when
it carries an Origin (browsers do; other clients do not), that Origin is this server itself or one configured
as trusted. Anything else is answered 403 before it reaches the application.

Stdlib only: the emulators use it (through `HostOriginGuard` or `HostPolicy.refusal`) as well as the gateway.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# host[:port] as a Host header (or a configured allowed host) writes it: a DNS name or IPv4 address, or an
# IPv6 address in brackets. Anything else (userinfo, paths, spaces, a trailing dot) is not a name we serve.
_HOST = re.compile(
    r"^(?:(?P<name>[a-z0-9](?:[a-z0-9\-_.]*[a-z0-9])?)|\[(?P<v6>[0-9a-f:.]+)\])(?::(?P<port>\d{1,5}))?$"
)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def parse_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6][:port]` -> (lower-case name, port or None); None when it is not a host name."""
    m = _HOST.match(value.strip().lower())
    if m is None:
        return None
    name = m["name"]
    if m["v6"] is not None:
        try:
            name = str(ipaddress.IPv6Address(m["v6"]))
        except ValueError:
            return None
    port = int(m["port"]) if m["port"] else None
    if port is not None and not 0 < port < 65536:
        return None
    return name, port


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_unspecified(host: str) -> bool:
    """0.0.0.0 or :: (every interface): not a name a client can send as Host."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def normalize_origin(origin: str) -> str | None:
    """`scheme://host[:port]` with the default port written out; None when it is not such an origin."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = parse_host(f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname)
    if host is None:
        return None
    name = f"[{host[0]}]" if ":" in host[0] else host[0]
    return f"{scheme}://{name}:{port or _DEFAULT_PORTS[scheme]}"


@dataclass(frozen=True)
class HostPolicy:
    """The Host names a server answers to and the browser Origins it trusts.

    `hosts` holds (name, port) pairs; a port of None accepts the name on any port (a configured public name
    behind a proxy). `origins` holds normalized `scheme://host:port` strings.
    """

    hosts: frozenset[tuple[str, int | None]]
    origins: frozenset[str] = frozenset()
    hint: str = ""

    def host_allowed(self, header: str, scheme: str = "http") -> bool:
        parsed = parse_host(header)
        if parsed is None:
            return False
        name, port = parsed
        port = port or _DEFAULT_PORTS.get(scheme, 80)
        return (name, port) in self.hosts or (name, None) in self.hosts

    def origin_allowed(self, origin: str) -> bool:
        normalized = normalize_origin(origin)
        if normalized is None:  # "null" (a sandboxed frame, a file:// page) and anything malformed
            return False
        if normalized in self.origins:
            return True
        scheme, _, host = normalized.partition("://")
        return self.host_allowed(host, scheme)  # the server's own origin

    def refusal(self, hosts: Sequence[str], origins: Sequence[str], scheme: str = "http") -> str | None:
        """Why a request with these Host and Origin header values is refused; None when it is served.

        Exactly one Host is required (HTTP/1.1 has one; two would let a proxy and this server disagree).
        No Origin means a client that is not a browser (curl, an MCP client, the Looker SDK): served."""
        if len(hosts) != 1 or not self.host_allowed(hosts[0], scheme):
            return "host_not_allowed"
        if any(not self.origin_allowed(o) for o in origins):
            return "origin_not_allowed"
        return None


def local_policy(
    port: int,
    bind_host: str | None = None,
    allowed_hosts: Iterable[str] = (),
    allowed_origins: Iterable[str] = (),
    hint: str = "",
) -> HostPolicy:
    """The loopback names with the serving port, the bound address (unless it is every interface) with it,
    and the configured extra hosts (`name` = any port, `name:port`) and origins."""
    hosts: set[tuple[str, int | None]] = {(name, port) for name in LOOPBACK_NAMES}
    if bind_host and not is_unspecified(bind_host):
        bound = parse_host(f"[{bind_host}]" if ":" in bind_host and "[" not in bind_host else bind_host)
        if bound is not None:
            hosts.add((bound[0], port))
    for entry in allowed_hosts:
        parsed = parse_host(entry)
        if parsed is None:
            raise ValueError(f"{entry!r} is not a host name (name, name:port or [v6]:port)")
        hosts.add(parsed)
    origins = set()
    for entry in allowed_origins:
        normalized = normalize_origin(entry)
        if normalized is None:
            raise ValueError(f"{entry!r} is not an origin (http(s)://host[:port], no path)")
        origins.add(normalized)
    return HostPolicy(frozenset(hosts), frozenset(origins), hint)


def refusal_body(reason: str, hint: str = "") -> bytes:
    detail = {
        "host_not_allowed": "the Host header does not name this server (a DNS-rebinding request?)",
        "origin_not_allowed": "requests from this browser origin are not allowed",
    }[reason]
    body = {"error": reason, "detail": detail}
    if hint:
        body["hint"] = hint
    return json.dumps(body).encode()


def _header_values(scope: Scope, name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in scope.get("headers") or () if k.lower() == name]


class HostOriginGuard:
    """ASGI middleware: refuses (403, JSON) a request whose Host or Origin the policy does not allow."""

    def __init__(self, app: App, policy: HostPolicy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        reason = self.policy.refusal(_header_values(scope, b"host"), _header_values(scope, b"origin"), scheme)
        if reason is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = refusal_body(reason, self.policy.hint)
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
