"""Sign-in end to end (issue 28, done when): a real OpenID provider (Node's oidc-provider, `oidc_provider/`), the
real gateway (`ade mcp --transport http` with `auth: oidc`) and the dbt Cloud emulator, all on loopback.

Tokens come from the provider's own flows: client credentials (a robot that may only read) and authorization code
with PKCE (alice in group `analysts`, a reader; bob in `data-platform`, an operator). A reader sees only read
tools; bob triggers a dbt Cloud job and the audit run names him; expired, foreign-issuer and other-audience tokens
get 401 with the discovery header; a rotated signing key is picked up without restarting the gateway.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from joserfc import jwt

from ade_platform.dev import _wait_http
from ade_platform.emulators.dbt_cloud import DAILY_JOB, DEMO_TOKEN
from ade_platform.emulators.demo import free_port
from ade_platform.live import TAG_CLIENT, TAG_USER
from tests.auth.oidc_provider import BRIEF_ROBOT, OidcProvider, claims_of
from tests.auth.support import CHANGING, call, initialize, tool_names
from tests.mcp.dbt_cloud_support import Emulator, running_emulator

pytestmark = pytest.mark.slow
ADE = str(Path(sys.executable).parent / "ade")


@dataclass
class Stack:
    url: str  # the gateway's MCP endpoint (the protected resource)
    provider: OidcProvider
    emulator: Emulator
    dagster_home: Path


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("oidc")
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    provider = OidcProvider(tmp, resource=url).start()
    try:
        with running_emulator(tmp / "dbt-cloud", history=False) as emulator, emulator.runs_held():
            config = tmp / "ade.yaml"
            config.write_text(
                f"home: {tmp / 'home'}\n"
                "mcp:\n"
                "  toolsets: [dbt-artifacts, dbt-cloud, orchestrator, snowflake, snowfakery]\n"
                "  http:\n"
                "    auth: oidc\n"
                "    oidc:\n"
                f"      issuer: {provider.url}\n"  # the JWKS URL comes from its discovery document
                "      jwks_refresh_seconds: 0\n"
                "  access:\n"
                "    groups: {analysts: [reader], data-platform: [operator]}\n"
                "dbt_cloud:\n"
                f"  base_url: {emulator.api}\n"
                "  account_id: 7001\n"
                "  api_token: ${DBT_CLOUD_API_TOKEN}\n"
                "  project_id: 7101\n"
                "  tracked_jobs: [7301, 7303]\n"
            )
            env = {k: v for k, v in os.environ.items() if not k.startswith(("ADE_", "DAGSTER_HOME"))}
            env.update(ADE_CONFIG=str(config), DBT_CLOUD_API_TOKEN=DEMO_TOKEN)
            log = (tmp / "gateway.log").open("ab")
            gateway = subprocess.Popen(
                [ADE, "mcp", "--transport", "http", "--port", str(port)], env=env, stdout=log, stderr=log
            )
            try:
                assert _wait_http(url, 90, gateway), (tmp / "gateway.log").read_text()[-3000:]
                yield Stack(url, provider, emulator, tmp / "home" / "dagster")
            finally:
                gateway.terminate()
                gateway.wait(30)
                log.close()
    finally:
        provider.stop()


def _run_tags(stack: Stack, dagster_run_id: str) -> dict[str, str]:
    from ade_platform.instance import open_instance

    instance = open_instance(stack.dagster_home, compute_logs=False)
    run = instance.get_run_by_id(dagster_run_id)
    assert run is not None, dagster_run_id
    return dict(run.tags)


def test_a_robot_signs_in_with_client_credentials_and_only_reads(stack: Stack) -> None:
    token = stack.provider.client_credentials(scope="ade:read ade:operate")  # asks for more than it may have
    assert claims_of(token)["scope"] == "ade:read" and claims_of(token)["aud"] == stack.url
    seen = tool_names(stack.url, token)
    assert "dbtcloud_list_jobs" in seen and "dbt_get_lineage" in seen and not seen & CHANGING
    ok, jobs = call(stack.url, token, "dbtcloud_list_jobs", {"project_id": 7101})
    assert ok and {job["job_id"] for job in jobs["jobs"]} >= {DAILY_JOB}, jobs


def test_a_reader_sees_only_read_tools(stack: Stack) -> None:
    token = stack.provider.sign_in("alice", "ade:read ade:operate")  # the provider grants her ade:read only
    assert claims_of(token)["groups"] == ["analysts"] and claims_of(token)["scope"] == "ade:read"
    seen = tool_names(stack.url, token)
    assert "dbtcloud_get_last_run" in seen and not seen & CHANGING, seen & CHANGING
    before = stack.emulator.counters()["requests"]
    ok, error = call(stack.url, token, "dbtcloud_trigger_job", {"job_id": DAILY_JOB, "cause": "alice tries"})
    assert not ok and error["error"] == "forbidden" and error["roles"] == ["reader"], error
    assert stack.emulator.counters()["requests"] == before  # dbt Cloud never heard of it


def test_an_operator_triggers_and_the_run_names_them(stack: Stack) -> None:
    from dagster import RunsFilter

    from ade_platform.instance import open_instance

    token = stack.provider.sign_in("bob", "ade:read ade:operate")
    assert "dbtcloud_trigger_job" in tool_names(stack.url, token)
    ok, run = call(stack.url, token, "dbtcloud_trigger_job", {"job_id": DAILY_JOB, "cause": "bob: rebuild"})
    assert ok, run
    tags = _run_tags(stack, run["provenance"]["run_id"])  # in-line: recorded before the answer
    assert (
        tags[TAG_USER] == "bob"
        and tags[TAG_CLIENT] == "ade-desktop"
        and tags["ade/tool"] == "dbtcloud_trigger_job"
    )
    # filterable as in the Dagster UI's run list (tag ade/user=bob)
    instance = open_instance(stack.dagster_home, compute_logs=False)
    bobs = instance.get_runs(filters=RunsFilter(tags={TAG_USER: "bob"}))
    assert [r.run_id for r in bobs] == [run["provenance"]["run_id"]]


def test_expired_foreign_and_misaddressed_tokens_get_401_with_the_discovery_header(stack: Stack) -> None:
    brief = stack.provider.client_credentials(BRIEF_ROBOT)
    assert initialize(stack.url, brief).status_code == 200
    # past its expiry: six seconds after issue, long enough to be valid above on a loaded CI machine (one was not)
    time.sleep(max(0.0, claims_of(brief)["exp"] - time.time()) + 1.1)
    own = claims_of(stack.provider.client_credentials())
    forged = jwt.encode(  # signed with the provider's real key, but naming another issuer
        {"alg": "RS256", "kid": stack.provider.key.kid},
        {**own, "iss": "https://idp.attacker.example", "sub": "mallory"},
        stack.provider.key,
    )
    attacks = {
        "expired": brief,
        "foreign issuer": forged,
        "another API's token": stack.provider.client_credentials(resource="https://other-api.example/"),
    }
    metadata_url = stack.url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")
    for name, token in attacks.items():
        refused = initialize(stack.url, token)
        assert refused.status_code == 401, (name, refused.text)
        assert f'resource_metadata="{metadata_url}"' in refused.headers["www-authenticate"], name
    # the header leads an MCP host to the provider
    metadata = httpx.get(metadata_url, timeout=10).json()
    assert metadata["authorization_servers"] == [stack.provider.url] and metadata["resource"] == stack.url
    discovery = httpx.get(f"{stack.provider.url}/.well-known/openid-configuration", timeout=10).json()
    assert discovery["authorization_endpoint"] and "S256" in discovery["code_challenge_methods_supported"]


def test_a_rotated_signing_key_is_picked_up_without_restart(stack: Stack) -> None:
    old = stack.provider.sign_in("bob", "ade:read")
    assert initialize(stack.url, old).status_code == 200
    old_kid = json.loads(httpx.get(f"{stack.provider.url}/jwks", timeout=10).text)["keys"][0]["kid"]
    stack.provider.rotate()  # the provider restarts signing with (and publishing only) a new key
    new = stack.provider.sign_in("bob", "ade:read")
    assert old_kid != stack.provider.key.kid
    ok, _ = call(stack.url, new, "dbtcloud_list_jobs", {"project_id": 7101})
    assert ok  # the gateway fetched the new key set on the unknown key id, without a restart
    assert initialize(stack.url, old).status_code == 401  # the withdrawn key no longer verifies
