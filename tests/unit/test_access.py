"""The access policy, the per-user limiter and the caller a token names (mcp_bridge/access.py), without HTTP."""

from __future__ import annotations

import pytest

from ade_platform.config import AccessSettings, CallerLimits, Settings
from ade_platform.lib.caller import Caller, calling_as, current_caller, local_caller
from mcp_bridge.access import AccessPolicy, CallerLimiter, caller_of
from mcp_bridge.errors import ToolFailure


def test_roles_from_scopes_groups_and_defaults() -> None:
    access = AccessSettings(
        roles={"dbt-cloud-ops": {"effects": ["read", "trigger"], "toolsets": ["dbt-cloud"]}},
        groups={"analysts": ["reader"], "cloud": ["dbt-cloud-ops"]},
        default_roles=["reader"],
    )
    policy = AccessPolicy(access)
    assert policy.roles(Caller("a", "c")) == ["reader"]
    assert policy.roles(Caller("a", "c", scopes=frozenset({"ade:operate"}))) == ["operator", "reader"]
    cloud = policy.roles(Caller("a", "c", groups=frozenset({"cloud"})))
    assert policy.allows(cloud, "trigger", "dbt-cloud") and not policy.allows(
        cloud, "trigger", "orchestrator"
    )
    assert policy.allows(cloud, "read", "warehouse")  # through the default reader role
    assert not policy.allows(["admin"], None, "dbt-cloud")  # unclassified: no role allows it
    assert policy.allows(["admin"], "ddl", "snowflake") and not policy.allows(
        ["operator"], "ddl", "snowflake"
    )


def test_access_settings_refuse_unknown_roles_and_toolsets() -> None:
    with pytest.raises(ValueError, match="unknown role"):
        AccessSettings(scopes={"x": ["superuser"]})
    with pytest.raises(ValueError, match="unknown toolset"):
        AccessSettings(roles={"r": {"effects": ["read"], "toolsets": ["jira"]}})
    with pytest.raises(ValueError, match="oidc"):
        Settings(home="/tmp/h", mcp={"http": {"auth": "oidc"}})
    with pytest.raises(ValueError, match="remove token"):
        Settings(
            home="/tmp/h", mcp={"http": {"auth": "oidc", "token": "t" * 40, "oidc": {"issuer": "https://i"}}}
        )
    # a redefined built-in role replaces it; the other built-ins stay
    redefined = AccessSettings(roles={"reader": {"effects": ["read"], "toolsets": ["lineage"]}})
    assert redefined.roles["reader"].toolsets == ["lineage"] and "admin" in redefined.roles


def test_limiter_per_minute_and_at_once() -> None:
    now = [1000.0]
    limiter = CallerLimiter.live(CallerLimits(live_calls_per_minute=2, concurrent_live_calls=1))
    limiter.clock = lambda: now[0]
    with limiter.admitted("alice"):
        with pytest.raises(ToolFailure) as busy, limiter.admitted("alice"):
            pass
        assert busy.value.code == "rate_limited" and busy.value.extra["retry_after_seconds"] == 1
        with limiter.admitted("bob"):  # per user
            pass
    now[0] += 10
    with limiter.admitted("alice"):
        pass
    now[0] += 5
    with pytest.raises(ToolFailure) as full, limiter.admitted("alice"):
        pass
    assert (
        full.value.extra["retry_after_seconds"] == 45
    )  # the first of the two leaves the window 45 s from now
    now[0] += 45
    with limiter.admitted("alice"):
        pass


def test_the_caller_a_token_names() -> None:
    from fastmcp.server.auth import AccessToken

    signed = AccessToken(
        token="t",
        client_id="claude",
        scopes=["ade:read"],
        subject="u-1",
        claims={"sub": "u-1", "email": "ana@example.com", "groups": ["analysts", 7, {"x": 1}]},
    )
    caller = caller_of(signed, None)
    assert (caller.user, caller.client, caller.signed_in) == ("u-1", "claude", True)
    assert caller.scopes == {"ade:read"} and caller.groups == {"analysts", "7"}
    oidc = Settings(
        home="/tmp/h",
        mcp={
            "http": {
                "auth": "oidc",
                "oidc": {"issuer": "https://i", "user_claim": "email", "groups_claim": "roles"},
            }
        },
    ).mcp.http.oidc
    assert caller_of(signed, oidc).user == "ana@example.com" and caller_of(signed, oidc).groups == frozenset()
    assert caller_of(None, None) == local_caller()
    shared = caller_of(AccessToken(token="t", client_id="shared-token", scopes=[]), None)
    assert (shared.user, shared.signed_in) == ("shared-token", False)
    # a name fit for a run tag: printable, bounded
    assert (
        Caller("a\nb\x00" + "x" * 500, "c").user.startswith("a?b?")
        and len(Caller("x" * 500, "c").user) == 200
    )


def test_calling_as_restores_the_previous_caller() -> None:
    with calling_as(Caller("alice", "c")):
        with calling_as(Caller("bob", "c")):
            assert current_caller().user == "bob"
        assert current_caller().user == "alice"
    assert current_caller() == local_caller()


def test_the_deploying_guide_configuration_loads() -> None:
    """The `auth: oidc` example in docs/DEPLOYING.md is a valid `mcp:` section."""
    import re

    import yaml

    from tests.conftest import REPO_ROOT

    guide = (REPO_ROOT / "docs" / "DEPLOYING.md").read_text()
    block = next(b for b in re.findall(r"```yaml\n(.*?)```", guide, re.S) if "auth: oidc" in b)
    mcp = Settings(home="/tmp/h", **yaml.safe_load(block)).mcp
    assert mcp.http.auth == "oidc" and mcp.http.oidc is not None and mcp.http.oidc.public_url
    assert set(mcp.access.roles) >= {"reader", "operator", "admin", "cloud-operator"}
