"""Per-user sign-in over HTTP (issue 28), against the gateway's own HTTP app and a token issuer on loopback.

Each attack is a request an outsider (or a signed-in user reaching past their role) could send; it gets a 401 with
the discovery header, or a structured `forbidden` / `rate_limited`, before any tool runs. The same flows against
the real identity provider (Node's oidc-provider) and `ade mcp --transport http` are in test_oidc_provider.py.
"""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.types import ToolAnnotations

from ade_platform.lib.caller import current_caller
from tests.auth.support import (
    CHANGING,
    LocalIssuer,
    acall,
    call,
    initialize,
    new_key,
    oidc_settings,
    threaded_gateway,
    tool_names,
)

TOOLSETS = "dbt-artifacts, dbt-cloud, orchestrator, snowflake, snowfakery"
ACCESS = (
    "  access:\n"
    "    roles:\n"
    "      cloud-operator: {effects: [read, trigger], toolsets: [dbt-cloud]}\n"
    "    groups:\n"
    "      data-platform: [operator]\n"
    "      cloud-team: [cloud-operator]\n"
    "    limits: {live_calls_per_minute: 3, concurrent_live_calls: 1}\n"
)


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    with LocalIssuer() as running:
        yield running


@pytest.fixture(scope="module")
def gateway(issuer: LocalIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Five toolsets (every kind of effect), the access settings above, and probe tools: `probe_wait` (a live
    read that waits for a release), `probe_tally` (a cached read) and `probe_unclassified`."""
    tmp = tmp_path_factory.mktemp("sign-in")
    settings = oidc_settings(tmp, issuer.url, toolsets=TOOLSETS, access=ACCESS)
    release = threading.Event()
    entered = threading.Semaphore(0)

    def extend(server: Any) -> None:
        @server.tool(name="probe_wait", annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=True))
        def probe_wait(hold: bool = False) -> dict:
            entered.release()
            if hold:
                release.wait(30)
            return {"user": current_caller().user}

        @server.tool(name="probe_tally", annotations=ToolAnnotations(readOnlyHint=True, openWorldHint=False))
        def probe_tally() -> dict:
            return {"user": current_caller().user}

        @server.tool(name="probe_unclassified")  # neither in CHANGES nor annotated read-only
        def probe_unclassified() -> dict:
            raise AssertionError("an unclassified tool ran")

    with threaded_gateway(settings, extend) as url:
        yield {"url": url, "release": release, "entered": entered}


def _unsigned(token: str) -> str:
    """The same claims with `alg: none` and no signature."""
    header = (
        base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "JWT"}).encode()).rstrip(b"=").decode()
    )
    return f"{header}.{token.split('.')[1]}."


def _audience(url: str) -> str:
    return url  # the resource is the MCP endpoint itself (<public_url>/mcp)


def test_metadata_and_the_discovery_header(gateway: dict[str, Any], issuer: LocalIssuer) -> None:
    url = gateway["url"]
    base = url.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        metadata = httpx.get(base + path, timeout=10).json()
        assert metadata["resource"] == url and metadata["authorization_servers"] == [issuer.url], metadata
        # hosts request every scope advertised: only the reading one, by default
        assert metadata["scopes_supported"] == ["ade:read"], metadata
    refused = initialize(url)
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"].startswith("Bearer ")
    assert (
        f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
        in refused.headers["www-authenticate"]
    )
    # the Host/Origin guard still answers first: a rebinding page gets 403, not a sign-in challenge
    assert initialize(url, host="attacker.example").status_code == 403


def test_tokens_that_are_not_ours_get_401(gateway: dict[str, Any], issuer: LocalIssuer) -> None:
    url = gateway["url"]
    aud = _audience(url)
    ok = issuer.token("alice", audience=aud, scopes="ade:read")
    assert initialize(url, ok).status_code == 200
    attacks = {
        "expired": issuer.token("alice", audience=aud, scopes="ade:read", expires_in=-5),
        "foreign issuer, signed with the provider's own key": issuer.token(
            "alice", audience=aud, scopes="ade:read", issuer="https://idp.attacker.example"
        ),
        "signed with a key the provider never published": issuer.token(
            "alice", audience=aud, scopes="ade:read", key=new_key()
        ),
        "for another API (audience)": issuer.token(
            "alice", audience="https://other-api.example", scopes="ade:read"
        ),
        "never expires": issuer.token("alice", audience=aud, scopes="ade:read", exp=None),
        "not valid before next hour": issuer.token("alice", audience=aud, scopes="ade:read", nbf=2**31),
        "unsigned (alg none)": _unsigned(ok),
        "garbage": "not-a-jwt",
    }
    for name, token in attacks.items():
        refused = initialize(url, token)
        assert refused.status_code == 401, (name, refused.status_code, refused.text)
        challenge = refused.headers["www-authenticate"]
        assert "resource_metadata=" in challenge and 'error="invalid_token"' in challenge, (name, challenge)
        assert "mcp-session-id" not in refused.headers, name


def test_a_reader_sees_and_calls_only_read_tools(gateway: dict[str, Any], issuer: LocalIssuer) -> None:
    url = gateway["url"]
    reader = issuer.token("alice", audience=_audience(url), scopes="ade:read")
    seen = tool_names(url, reader)
    assert "dbt_get_lineage" in seen and "dbtcloud_list_jobs" in seen and "describe_object" in seen
    assert not seen & CHANGING, seen & CHANGING
    # called anyway: refused before the tool runs (not dbt_cloud_not_configured, which the tool itself would say)
    for tool, args in (
        ("dbtcloud_trigger_job", {"job_id": 7301, "cause": "reader tries"}),
        ("execute_ddl", {"statement": "DROP TABLE x"}),
        ("snowfakery.run_recipe", {"recipe_text": "- object: a"}),
    ):
        ok, error = call(url, reader, tool, args)
        assert not ok and error["error"] == "forbidden", (tool, error)
        assert error["roles"] == ["reader"] and "alice" in error["detail"] and error["hint"]


def test_roles_come_from_scopes_and_groups(gateway: dict[str, Any], issuer: LocalIssuer) -> None:
    url = gateway["url"]
    aud = _audience(url)
    operator = tool_names(url, issuer.token("bob", audience=aud, groups=["data-platform"]))
    assert {"dbtcloud_trigger_job", "orchestrator_trigger_dag", "dbt_get_lineage"} <= operator
    assert not operator & {"execute_ddl", "sync_objects", "snowfakery.run_recipe"}
    admin_token = issuer.token("carol", audience=aud, scopes="ade:admin")
    admin = tool_names(url, admin_token)
    assert admin >= CHANGING
    # a tool nobody classified is allowed to no role, admin included
    assert "probe_unclassified" not in admin
    ok, error = call(url, admin_token, "probe_unclassified")
    assert not ok and error["error"] == "forbidden" and error["effect"] is None, error
    # a role limited to one toolset: dbt Cloud's reads and trigger, nothing else
    cloud = tool_names(url, issuer.token("dan", audience=aud, groups=["cloud-team"]))
    assert cloud and all(name.startswith("dbtcloud_") for name in cloud), cloud
    assert "dbtcloud_trigger_job" in cloud
    # signed in, but no scope or group maps to a role: nothing listed, everything refused
    nobody = issuer.token("eve", audience=aud, scopes="openid profile", groups=["interns"])
    assert tool_names(url, nobody) == set()
    ok, error = call(url, nobody, "dbt_get_lineage", {"node_id": "model.p.a"})
    assert not ok and error["error"] == "forbidden" and error["roles"] == []


def test_live_calls_are_limited_per_user(gateway: dict[str, Any], issuer: LocalIssuer) -> None:
    url, release, entered = gateway["url"], gateway["release"], gateway["entered"]
    aud = _audience(url)
    frank = issuer.token("frank", audience=aud, scopes="ade:read")
    grace = issuer.token("grace", audience=aud, scopes="ade:read")

    async def concurrent() -> tuple[Any, Any, Any]:
        held = asyncio.create_task(acall(url, frank, "probe_wait", {"hold": True}))
        await asyncio.to_thread(entered.acquire, True, 30)  # frank's first call is running
        second = await acall(url, frank, "probe_wait")  # frank's one slot is taken
        other = await acall(url, grace, "probe_wait")  # another user is not affected
        release.set()
        return await held, second, other

    first, second, other = asyncio.run(concurrent())
    assert first == (True, {"user": "frank"}) and other == (True, {"user": "grace"})
    assert not second[0] and second[1]["error"] == "rate_limited", second
    assert second[1]["retry_after_seconds"] >= 1 and "running" in second[1]["detail"]
    # per minute: frank has started 1 live call (the refused one does not count); 2 more, then refused
    assert call(url, frank, "probe_wait")[0] and call(url, frank, "probe_wait")[0]
    ok, error = call(url, frank, "probe_wait")
    assert not ok and error["error"] == "rate_limited" and 1 <= error["retry_after_seconds"] <= 60, error
    # cached reads are not live calls: not limited
    assert all(call(url, frank, "probe_tally")[0] for _ in range(5))


def test_a_rotated_signing_key_is_picked_up_without_restart(tmp_path: Path) -> None:
    with LocalIssuer() as issuer, threaded_gateway(oidc_settings(tmp_path, issuer.url)) as url:
        before = issuer.token("alice", audience=url, scopes="ade:read")
        assert "dbt_get_lineage" in tool_names(url, before)
        fetches = issuer.jwks_fetches
        assert "dbt_get_lineage" in tool_names(url, before)
        assert issuer.jwks_fetches == fetches  # the keys are cached between requests
        issuer.rotate()
        after = issuer.token("alice", audience=url, scopes="ade:read")
        assert "dbt_get_lineage" in tool_names(url, after)  # unknown key id: the JWKS is fetched again
        assert issuer.jwks_fetches == fetches + 1
        assert initialize(url, before).status_code == 401  # the withdrawn key no longer verifies
