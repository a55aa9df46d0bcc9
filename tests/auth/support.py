"""Sign-in test helpers: a small token issuer on loopback (its discovery document and JWKS over real HTTP, tokens
signed with its RSA keys), the gateway's HTTP app served in a thread, and MCP calls with a bearer token.

The issuer stands in for an identity provider in the fast tests; `oidc_provider.py` runs the real one (Node's
oidc-provider) for the slow end-to-end tests.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from fastmcp import Client, FastMCP
from joserfc import jwt
from joserfc.jwk import RSAKey

from ade_platform.config import Settings, load_settings
from ade_platform.emulators.demo import free_port
from tests.helpers import initialize_request, tool_payload

# The tools that change something outside ADE (effects beyond read): what a reader must not be able to call.
CHANGING = {
    "dbtcloud_trigger_job",
    "orchestrator_trigger_dag",
    "execute_ddl",
    "sync_objects",
    "snowfakery.run_recipe",
}


def new_key() -> RSAKey:
    return RSAKey.generate_key(
        2048, parameters={"kid": uuid.uuid4().hex[:12], "use": "sig", "alg": "RS256"}, private=True
    )


class LocalIssuer:
    """An issuer URL whose discovery document and JWKS are served on loopback; `token()` signs like a provider."""

    def __init__(self) -> None:
        self.key = new_key()
        self.published = [self.key]
        self.jwks_fetches = 0
        issuer = self
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
                    body = {"keys": [k.as_dict(private=False) for k in issuer.published]}
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> LocalIssuer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def rotate(self) -> None:
        """Sign with a new key from now on; publish only it (the old one is withdrawn)."""
        self.key = new_key()
        self.published = [self.key]

    def token(
        self,
        sub: str,
        *,
        audience: str,
        scopes: str = "",
        groups: list[str] | None = None,
        client_id: str = "test-agent",
        expires_in: int = 300,
        issuer: str | None = None,
        key: RSAKey | None = None,
        **claims: Any,
    ) -> str:
        key = key or self.key
        now = int(time.time())
        body = {
            "iss": issuer or self.url,
            "sub": sub,
            "aud": audience,
            "iat": now,
            "exp": now + expires_in,
            "client_id": client_id,
            **({"scope": scopes} if scopes else {}),
            **({"groups": groups} if groups is not None else {}),
            **claims,
        }
        body = {k: v for k, v in body.items() if v is not None}
        return jwt.encode({"alg": "RS256", "kid": key.kid}, body, key)


def oidc_settings(
    tmp_path: Path, issuer: str, *, toolsets: str = "dbt-artifacts", access: str = "", sections: str = ""
) -> Settings:
    """An ade.yaml with `auth: oidc` for `issuer`: `access` is YAML under `mcp:` (e.g. an `access:` block),
    `sections` YAML at the top level (e.g. a dbt_cloud: section)."""
    config = tmp_path / "ade.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\n"
        "mcp:\n"
        f"  toolsets: [{toolsets}]\n"
        "  http:\n"
        "    auth: oidc\n"
        "    oidc:\n"
        f"      issuer: {issuer}\n"
        "      jwks_refresh_seconds: 0\n" + access + sections
    )
    return load_settings(config, env={})


@contextmanager
def threaded_gateway(
    settings: Settings, extend: Callable[[FastMCP], None] | None = None, port: int | None = None
) -> Iterator[str]:
    """The gateway's HTTP app exactly as `ade mcp --transport http` builds it, served by uvicorn in a thread;
    `extend` may add probe tools first. Yields the MCP URL."""
    import uvicorn

    from mcp_bridge.server import http_gateway

    port = port or free_port()
    server, options = http_gateway(settings, "127.0.0.1", port)
    if extend is not None:
        extend(server)
    app = server.http_app(**options)
    uv = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while not uv.started:
            assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        uv.should_exit = True
        thread.join(timeout=15)


async def acall(url: str, token: str, name: str, args: dict[str, Any] | None = None) -> tuple[bool, Any]:
    async with Client(url, auth=token) as client:
        return tool_payload(await client.call_tool(name, args or {}, raise_on_error=False))


def call(url: str, token: str, name: str, args: dict[str, Any] | None = None) -> tuple[bool, Any]:
    """One tools/call over HTTP with a bearer token: (ok, structured payload or error)."""
    return asyncio.run(acall(url, token, name, args))


def tool_names(url: str, token: str) -> set[str]:
    async def go() -> set[str]:
        async with Client(url, auth=token) as client:
            return {t.name for t in await client.list_tools()}

    return asyncio.run(go())


def initialize(url: str, token: str | None = None, **headers: str) -> httpx.Response:
    """A bare initialize POST (for status codes and headers)."""
    body = initialize_request()
    auth = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.post(
        url,
        content=json.dumps(body),
        headers={
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            **auth,
            **headers,
        },
        timeout=30,
    )
