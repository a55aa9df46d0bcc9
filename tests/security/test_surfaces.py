"""Effects and surfaces (issue 34): what a signed-in caller's roles allow covers resources and prompts, CPU-heavy
reads are limited per user on every transport, the sign-in metadata advertises only reading scopes, and claims are
read as the identity provider sent them.

Each class is generated variants through MCP (the gateway's HTTP app with tokens signed by a local issuer, as
tests/auth/test_sign_in.py does; in memory for stdio):
- every resource, resource template and prompt x every role that does not read its toolset: absent from the lists,
  refused with `forbidden` when read or fetched (and present for a role that reads it);
- floods of each heavy tool from one user: refused with `rate_limited` and `retry_after_seconds` past the limit,
  another user unaffected; the same over stdio; a live resource counts as a live call;
- `groups` claims written as strings with spaces, commas and tabs: one group each, never split;
- `scopes_supported` for generated scope tables: never a scope that grants more than reading unless configured.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastmcp import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from ade_platform.config import AccessSettings, load_settings
from mcp_bridge.access import HEAVY, caller_of, claim_values
from mcp_bridge.server import build_server
from tests.auth.support import LocalIssuer, acall, oidc_settings, threaded_gateway
from tests.helpers import tool_payload

TOOLSETS = "dbt-artifacts, dbt-cloud, orchestrator, snowfakery"
# One role per toolset, a group for each; "Data Platform" (with its space) and its words map to different roles.
ACCESS = (
    "  access:\n"
    "    roles:\n"
    "      artifacts-reader: {effects: [read], toolsets: [dbt-artifacts]}\n"
    "      cloud-reader: {effects: [read], toolsets: [dbt-cloud]}\n"
    "      orchestrator-reader: {effects: [read], toolsets: [orchestrator]}\n"
    "      snowfakery-reader: {effects: [read], toolsets: [snowfakery]}\n"
    "    groups:\n"
    "      artifacts: [artifacts-reader]\n"
    "      cloud: [cloud-reader]\n"
    "      orchestrator: [orchestrator-reader]\n"
    "      snowfakery: [snowfakery-reader]\n"
    "      Data Platform: [snowfakery-reader]\n"
    "      Data: [admin]\n"
    "      Platform: [admin]\n"
    "      'Data,Platform': [cloud-reader]\n"
    "    limits: {live_calls_per_minute: 2, heavy_calls_per_minute: 3, concurrent_heavy_calls: 1}\n"
)
GROUPS = {
    "artifacts": "dbt-artifacts",
    "cloud": "dbt-cloud",
    "orchestrator": "orchestrator",
    "snowfakery": "snowfakery",
}
RECIPE = "- snowfakery_version: 3\n- object: Account\n  count: 1\n"
# Valid arguments for each heavy tool of the gateway above (draft_recipe stops at sampling_unavailable in
# a session that cannot sample: the slot is still taken, as it would be while drafting).
HEAVY_CALLS: dict[str, dict[str, Any]] = {
    "snowfakery.validate_recipe": {"recipe_text": RECIPE},
    "snowfakery.explain_errors": {"recipe_text": RECIPE},
    "snowfakery.draft_recipe": {"description": "one account", "max_rounds": 1},
    "orchestrator_detect_patterns": {"log_text": "ERROR x\n", "patterns": ["ERROR"]},
}
TEMPLATE_VALUES = {
    "run_id": "20260101T000000-abcdef",
    "name": "manifest.json",
    "page*": "index",
    "name*": "faker",
    "file": "Account.csv",
    "format": "dot",
}


@pytest.fixture(scope="module")
def issuer() -> Iterator[LocalIssuer]:
    with LocalIssuer() as running:
        yield running


@pytest.fixture(scope="module")
def gateway(issuer: LocalIssuer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("surfaces")
    with threaded_gateway(oidc_settings(tmp, issuer.url, toolsets=TOOLSETS, access=ACCESS)) as url:
        yield url


def _uri(template: str) -> str:
    uri = template
    for name, value in TEMPLATE_VALUES.items():
        uri = uri.replace("{" + name + "}", value)
    assert "{" not in uri, uri
    return uri


async def _surface(url: str, token: str) -> dict[str, set[str]]:
    async with Client(url, auth=token) as client:
        return {
            "resources": {str(r.uri) for r in await client.list_resources()},
            "templates": {t.uri_template for t in await client.list_resource_templates()},
            "prompts": {p.name for p in await client.list_prompts()},
        }


async def _refusal(coroutine: Any) -> str | None:
    """The error code a read or prompt fetch was refused with; None when it answered."""
    try:
        await coroutine
    except Exception as exc:  # fastmcp raises the structured error's JSON as the message
        text = str(exc)
        for code in ("forbidden", "rate_limited", "dbt_cloud_not_configured", "run_not_found"):
            if f'"{code}"' in text:
                return code
        return text[:200]
    return None


# Who registers what: resources by their URI scheme, prompts by name (the snowfakery playbooks). A surface
# outside these tables fails the test until it is added here with its toolset.
SCHEMES = {"snowfakery": "snowfakery", "dbtcloud": "dbt-cloud"}
PROMPTS = {
    "author_recipe": {"goal": "x"},
    "debug_recipe": {"error_output": "x"},
    "explain_recipe": {},
    "refactor_recipe_for_reuse": {},
    "build_plugin_stub": {"plugin_name": "P", "purpose": "x"},
}


def _owners(gateway: str, admin: str) -> dict[tuple[str, str], str]:
    """(kind, resource URI / template / prompt) -> the toolset that registers it, for everything an admin sees."""
    owners: dict[tuple[str, str], str] = {}
    for kind, names in asyncio.run(_surface(gateway, admin)).items():
        for name in names:
            toolset = (
                "snowfakery" if kind == "prompts" and name in PROMPTS else SCHEMES.get(name.split(":")[0])
            )
            assert toolset is not None, f"{kind} {name}: add its toolset to SCHEMES / PROMPTS"
            owners[(kind, name)] = toolset
    return owners


def test_resources_and_prompts_follow_the_roles(gateway: str, issuer: LocalIssuer) -> None:
    owners = _owners(gateway, issuer.token("root", audience=gateway, scopes="ade:admin"))
    assert {kind for kind, _ in owners} == {"resources", "templates", "prompts"}
    assert set(owners.values()) == {"snowfakery", "dbt-cloud"}
    variants = 0
    callers = {group: issuer.token(f"user-{group}", audience=gateway, groups=[group]) for group in GROUPS}
    callers["no role"] = issuer.token("nobody", audience=gateway, scopes="openid", groups=["interns"])

    async def check(group: str, token: str) -> int:
        reads = GROUPS.get(group)
        seen = await _surface(gateway, token)
        count = 0
        async with Client(gateway, auth=token) as client:
            for (kind, name), toolset in owners.items():
                listed = name in seen[kind]
                assert listed == (toolset == reads), (group, kind, name, listed)
                if kind == "prompts":
                    code = await _refusal(client.get_prompt(name, PROMPTS[name]))
                else:
                    code = await _refusal(client.read_resource(name if kind == "resources" else _uri(name)))
                if toolset == reads:
                    assert code != "forbidden", (group, name)
                else:
                    assert code == "forbidden", (group, kind, name, code)
                count += 1
        return count

    for group, token in callers.items():
        variants += asyncio.run(check(group, token))
    # every surface x every caller: one role reads it, the others (and a caller with no role) are refused
    assert variants == len(owners) * len(callers)
    print(f"resources and prompts x roles: {variants} variants")


def test_heavy_reads_are_limited_per_user(gateway: str, issuer: LocalIssuer) -> None:
    """Each heavy tool flooded by a user of its own: 3 calls a minute, then rate_limited; others unaffected."""
    assert set(HEAVY_CALLS) <= HEAVY
    variants = 0
    for index, (tool, args) in enumerate(sorted(HEAVY_CALLS.items())):
        group = "orchestrator" if tool.startswith("orchestrator") else "snowfakery"
        flooder = issuer.token(f"flooder-{index}", audience=gateway, groups=[group])
        bystander = issuer.token(f"bystander-{index}", audience=gateway, groups=[group])

        async def flood(tool: str = tool, args: dict[str, Any] = args, flooder: str = flooder) -> list[Any]:
            return [await acall(gateway, flooder, tool, args) for _ in range(5)]

        outcomes = asyncio.run(flood())
        for ok, payload in outcomes[:3]:
            assert ok or payload["error"] == "sampling_unavailable", (tool, payload)
        for ok, payload in outcomes[3:]:
            assert not ok and payload["error"] == "rate_limited", (tool, payload)
            assert 1 <= payload["retry_after_seconds"] <= 60 and "CPU-heavy" in payload["detail"]
        ok, payload = asyncio.run(acall(gateway, bystander, tool, args))
        assert ok or payload["error"] == "sampling_unavailable", (tool, payload)
        variants += len(outcomes) + 1
    # the limit is on heavy calls together: a user who spent it on one heavy tool is refused another
    spender = issuer.token("spender", audience=gateway, groups=["snowfakery"])
    spent = [asyncio.run(acall(gateway, spender, "snowfakery.validate_recipe", {"recipe_text": RECIPE}))]
    spent += [asyncio.run(acall(gateway, spender, "snowfakery.validate_recipe", {"recipe_text": RECIPE}))]
    spent += [asyncio.run(acall(gateway, spender, "snowfakery.validate_recipe", {"recipe_text": RECIPE}))]
    assert all(ok for ok, _ in spent)
    ok, payload = asyncio.run(acall(gateway, spender, "snowfakery.explain_errors", {"recipe_text": RECIPE}))
    assert not ok and payload["error"] == "rate_limited"
    # cheap reads of the same user are not heavy
    assert asyncio.run(acall(gateway, spender, "snowfakery.analyze_recipe", {"recipe_text": RECIPE}))[0]
    print(f"heavy floods: {variants + 5} variants over {len(HEAVY_CALLS)} tools")


def test_a_live_resource_counts_as_a_live_call(gateway: str, issuer: LocalIssuer) -> None:
    """dbt Cloud's artifact resource reaches dbt Cloud: 2 live calls a minute here, then rate_limited."""
    reader = issuer.token("cloud-reader-1", audience=gateway, groups=["cloud"])

    async def reads() -> list[str | None]:
        async with Client(gateway, auth=reader) as client:
            uri = "dbtcloud://runs/1/artifacts/manifest.json"
            return [await _refusal(client.read_resource(uri)) for _ in range(3)]

    # no dbt_cloud section here: each read that starts fails inside, and still took its slot
    assert asyncio.run(reads()) == ["dbt_cloud_not_configured", "dbt_cloud_not_configured", "rate_limited"]


def test_heavy_limits_hold_over_stdio(tmp_path: Path) -> None:
    """Without sign-in (stdio, the shared token) the caller is one user, and the heavy limits still apply."""
    config = tmp_path / "ade.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\n"
        "mcp:\n"
        "  toolsets: [orchestrator]\n"
        "  access:\n"
        "    limits: {heavy_calls_per_minute: 2}\n"
    )
    server = build_server(load_settings(config, env={}))

    async def flood() -> list[tuple[bool, Any]]:
        async with Client(server) as client:
            args = {"log_text": "ERROR a\n", "patterns": ["ERROR"]}
            return [
                tool_payload(
                    await client.call_tool("orchestrator_detect_patterns", args, raise_on_error=False)
                )
                for _ in range(4)
            ]

    outcomes = asyncio.run(flood())
    assert [ok for ok, _ in outcomes] == [True, True, False, False], outcomes
    assert all(p["error"] == "rate_limited" and p["retry_after_seconds"] >= 1 for _, p in outcomes[2:])


# ---- groups and scopes as the provider sends them --------------------------------------------------------------
WORDS = ["Data", "Platform", "snowfakery", "cloud"]
SEPARATORS = [" ", ",", ", ", "\t"]


def _joined() -> list[str]:
    return [sep.join(pair) for pair in itertools.permutations(WORDS, 2) for sep in SEPARATORS]


def test_a_groups_string_is_one_group_through_the_gateway(gateway: str, issuer: LocalIssuer) -> None:
    """A groups claim sent as one string names one group: "Data Platform" is that group (snowfakery-reader), not
    "Data" and "Platform" (admin each); other joined strings name no configured group at all."""

    async def tools_of(token: str) -> set[str]:
        async with Client(gateway, auth=token) as client:
            return {t.name for t in await client.list_tools()}

    whole = asyncio.run(tools_of(issuer.token("gina", audience=gateway, groups="Data Platform")))
    assert whole and all(name.startswith("snowfakery.") for name in whole), whole
    assert "snowfakery.run_recipe" not in whole  # admin's workspace effect: not granted
    comma = asyncio.run(tools_of(issuer.token("hal", audience=gateway, groups="Data,Platform")))
    assert comma and all(name.startswith("dbtcloud_") for name in comma), comma
    variants = 2
    for index, text in enumerate(_joined()):
        if text in ("Data Platform", "Data,Platform"):
            continue
        seen = asyncio.run(tools_of(issuer.token(f"joined-{index}", audience=gateway, groups=text)))
        assert seen == set(), (text, seen)
        variants += 1
    # an array is a list of groups; a value of another type names none
    listed = asyncio.run(tools_of(issuer.token("ivy", audience=gateway, groups=["Data", "cloud"])))
    assert "snowfakery.run_recipe" in listed  # Data -> admin
    for odd in ({"Data": True}, 7, True):
        assert asyncio.run(tools_of(issuer.token("jo", audience=gateway, groups=odd))) == set(), odd
        variants += 1
    print(f"groups claims: {variants + 1} variants through the gateway")


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.text(min_size=1, max_size=40),
        st.lists(st.one_of(st.text(max_size=20), st.integers(), st.booleans(), st.none()), max_size=6),
        st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
        st.integers(),
        st.floats(allow_nan=False),
        st.booleans(),
        st.none(),
    )
)
def test_claims_are_read_as_sent(value: Any) -> None:
    from fastmcp.server.auth import AccessToken

    token = AccessToken(
        token="t", client_id="c", scopes=[], subject="u", claims={"sub": "u", "groups": value}
    )
    groups = caller_of(token, None).groups
    if isinstance(value, str):
        assert groups == {value}  # one group, spaces and commas included
    elif isinstance(value, list):
        assert groups == {str(v) for v in value if isinstance(v, str | int) and not isinstance(v, bool)}
    else:
        assert groups == frozenset()


def test_scope_claims_keep_the_standard_forms() -> None:
    from fastmcp.server.auth import AccessToken

    def scopes(**claims: Any) -> frozenset[str]:
        token = AccessToken(token="t", client_id="c", scopes=[], subject="u", claims={"sub": "u", **claims})
        return caller_of(token, None).scopes

    assert scopes(scope="ade:read ade:operate") == {"ade:read", "ade:operate"}  # RFC 9068: space-separated
    assert scopes(scp="ade:read ade:operate") == {"ade:read", "ade:operate"}  # Entra ID's scp: a string too
    assert scopes(scp=["ade:read", "ade admin", 3]) == {"ade:read", "ade admin", "3"}  # an array: as listed
    assert scopes(scope="ade:read", scp=["ade:admin"]) == {"ade:read"}  # scope first, as the verifier reads
    assert scopes(scope={"ade:admin": True}) == frozenset() and scopes(scp=7) == frozenset()
    assert claim_values("Data Platform") == ["Data Platform"] and claim_values("") == []


# ---- what the sign-in metadata advertises ------------------------------------------------------------------------
ROLE_NAMES = ["reader", "operator", "admin"]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(alphabet="abcdefgh:.", min_size=1, max_size=12),
        st.lists(st.sampled_from(ROLE_NAMES), max_size=3),
        max_size=6,
    )
)
def test_advertised_scopes_only_read(scopes: dict[str, list[str]]) -> None:
    access = AccessSettings(scopes=scopes)
    advertised = set(access.advertised())
    for scope in advertised:
        assert scopes[scope] and set(scopes[scope]) <= {"reader"}, (scope, scopes[scope])
    assert advertised == {s for s, roles in scopes.items() if roles and set(roles) <= {"reader"}}
    # configured: exactly what the operator lists
    assert AccessSettings(scopes=scopes, advertised_scopes=["openid", *scopes]).advertised() == sorted(
        {"openid", *scopes}
    )


def test_the_metadata_advertises_the_read_scope(gateway: str, tmp_path: Path, issuer: LocalIssuer) -> None:
    base = gateway.removesuffix("/mcp")
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        assert httpx.get(base + path, timeout=10).json()["scopes_supported"] == ["ade:read"]
    configured = oidc_settings(
        tmp_path,
        issuer.url,
        access="  access:\n    scopes: {team:read: [reader], team:ops: [operator]}\n"
        "    advertised_scopes: [openid, team:read]\n",
    )
    with threaded_gateway(configured) as url:
        metadata = httpx.get(url.removesuffix("/mcp") + "/.well-known/oauth-protected-resource", timeout=10)
        assert metadata.json()["scopes_supported"] == ["openid", "team:read"]
