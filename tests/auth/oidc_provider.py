"""The real identity provider of the sign-in tests: `oidc_provider/provider.mjs` (Node's oidc-provider) on loopback,
and the two ways to get an access token from it with httpx: client credentials, and authorization code with PKCE
(driving the provider's interaction endpoints, as a browser would, without one).

`make oidc-provider` (and `.ci/run`, through `make test-slow`) installs the package into
`tests/auth/oidc_provider/node_modules`; without Node or the package the tests skip and say why.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from ade_platform.emulators.demo import free_port
from tests.auth.support import new_key

HERE = Path(__file__).parent / "oidc_provider"
ROBOT = ("ade-robot", "robot-secret-for-tests-only")
BRIEF_ROBOT = ("ade-robot-brief", "brief-secret-for-tests-only")  # its tokens expire after six seconds
DESKTOP = "ade-desktop"
REDIRECT = "http://127.0.0.1/callback"
MIN_NODE = 20


def node_or_skip() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip(
            "Node.js is not installed: the sign-in tests run a real OpenID provider (oidc-provider) on it"
        )
    if not (HERE / "node_modules" / "oidc-provider").is_dir():
        pytest.skip(
            "oidc-provider is not installed: run `make oidc-provider` (npm ci in tests/auth/oidc_provider)"
        )
    return node


class OidcProvider:
    """provider.mjs in its own process; `rotate()` restarts it with a new signing key on the same issuer URL."""

    def __init__(self, workdir: Path, resource: str):
        self.node = node_or_skip()
        self.workdir = workdir
        self.resource = resource
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.keys_file = workdir / "oidc-keys.json"
        self.proc: subprocess.Popen[bytes] | None = None
        self.key = new_key()

    def start(self) -> OidcProvider:
        self.keys_file.write_text(json.dumps([self.key.as_dict(private=True)]))
        log = (self.workdir / "oidc-provider.log").open("ab")
        env = {**os.environ, "OIDC_PORT": str(self.port), "OIDC_KEYS": str(self.keys_file)}
        self.proc = subprocess.Popen(
            [self.node, "provider.mjs"],
            cwd=HERE,
            env={**env, "OIDC_RESOURCE": self.resource},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            assert self.proc.poll() is None, (self.workdir / "oidc-provider.log").read_text()[-2000:]
            try:
                if httpx.get(f"{self.url}/.well-known/openid-configuration", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the OpenID provider did not come up"
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
            self.proc = None

    def rotate(self) -> None:
        """A new signing key: the provider restarts publishing (and signing with) only the new one."""
        self.stop()
        self.key = new_key()
        self.start()

    def client_credentials(
        self, client: tuple[str, str] = ROBOT, scope: str = "ade:read", **extra: str
    ) -> str:
        reply = httpx.post(
            f"{self.url}/token",
            auth=client,
            data={"grant_type": "client_credentials", "scope": scope, **extra},
            timeout=10,
        )
        assert reply.status_code == 200, reply.text
        return reply.json()["access_token"]

    def sign_in(self, user: str, scope: str) -> str:
        """Authorization code with PKCE for the desktop client, `user` logging in at the interaction endpoint."""
        verifier = secrets.token_urlsafe(48)
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        state = secrets.token_urlsafe(12)
        with httpx.Client(base_url=self.url, timeout=10) as browser:
            step = browser.get(
                "/auth",
                params={
                    "client_id": DESKTOP,
                    "response_type": "code",
                    "redirect_uri": REDIRECT,
                    "scope": f"openid {scope}",
                    "resource": self.resource,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                    "state": state,
                },
            )
            location = _redirect(step)
            uid = location.rsplit("/", 1)[-1]
            asked: dict[str, Any] = browser.get(location).json()
            assert asked["prompt"] == "login", asked
            step = browser.post(f"/interaction/{uid}/login", data={"login": user})
            while not (location := _redirect(step)).startswith(REDIRECT):  # resume, then back to the client
                step = browser.get(location)
        query = parse_qs(urlsplit(location).query)
        assert query.get("state") == [state] and "code" in query, query
        reply = httpx.post(
            f"{self.url}/token",
            data={
                "grant_type": "authorization_code",
                "code": query["code"][0],
                "redirect_uri": REDIRECT,
                "client_id": DESKTOP,
                "code_verifier": verifier,
                "resource": self.resource,
            },
            timeout=10,
        )
        assert reply.status_code == 200, reply.text
        return reply.json()["access_token"]


def _redirect(reply: httpx.Response) -> str:
    assert reply.status_code in (302, 303), (reply.status_code, reply.text[:500])
    return reply.headers["location"]


def claims_of(token: str) -> dict[str, Any]:
    """The (unverified) claims of a JWT: what the provider put in it."""
    body = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
