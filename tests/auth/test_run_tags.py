"""Every audited live run names its caller (issue 28 §3): `ade/user` and `ade/client` tags, filterable in Dagster.

Calls of two users that run at the same time (both inside their live call at once) each get their own name: the
caller travels in a context variable, never in a global. Over stdio (and loopback without a token) the caller is
the local OS user; with the shared token it is `shared-token`.
"""

from __future__ import annotations

import asyncio
import getpass
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import ToolAnnotations

from ade_platform.config import load_settings
from ade_platform.lib.caller import current_caller
from ade_platform.live import TAG_CLIENT, TAG_USER, flush_all
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.auth.support import LocalIssuer, acall, oidc_settings, threaded_gateway
from tests.helpers import call_tool

pytestmark = pytest.mark.integration
LIVE_READ = ToolAnnotations(readOnlyHint=True, openWorldHint=True)


def _add_probe(server: Any, ctx: BridgeContext, together: threading.Barrier | None = None) -> None:
    """`probe_live`: one audited live read (BridgeContext.live_call_async, the toolsets' common entry). With
    `together`, each call first waits until every other caller's call has started too, so the run's tags and the
    caller seen inside are read while the other caller's call is in flight."""

    @server.tool(name="probe_live", annotations=LIVE_READ)
    async def probe_live(note: str) -> dict:
        if together is not None:
            await anyio.to_thread.run_sync(together.wait)
        seen, stamp = await ctx.live_call_async(
            "probe_live", lambda: current_caller().user, arguments={"note": note}
        )
        return {"seen": seen, "run_id": stamp["run_id"]}


def _runs(ctx: BridgeContext, **tags: str) -> list[Any]:
    from dagster import RunsFilter

    flush_all()
    return list(ctx.live().instance().get_runs(filters=RunsFilter(tags=tags)))


def test_concurrent_callers_each_name_their_own_runs(tmp_path: Path) -> None:
    with LocalIssuer() as issuer:
        settings = oidc_settings(tmp_path, issuer.url)
        ctx = BridgeContext.from_settings(settings)
        together = threading.Barrier(2, timeout=60)
        with threaded_gateway(settings, lambda server: _add_probe(server, ctx, together)) as url:
            alice = issuer.token("alice", audience=url, scopes="ade:read", client_id="claude-desktop")
            bob = issuer.token("bob", audience=url, scopes="ade:read", client_id="cursor")

            async def both() -> list[tuple[bool, Any]]:
                return await asyncio.gather(
                    acall(url, alice, "probe_live", {"note": "a"}),
                    acall(url, bob, "probe_live", {"note": "b"}),
                )

            (ok_a, a), (ok_b, b) = asyncio.run(both())
    assert ok_a and ok_b, (a, b)
    assert a["seen"] == "alice" and b["seen"] == "bob"  # each call ran as its own caller, at the same time
    instance = ctx.live().instance()
    flush_all()
    for answer, user, client in ((a, "alice", "claude-desktop"), (b, "bob", "cursor")):
        run = instance.get_run_by_id(answer["run_id"])
        assert run is not None and run.tags[TAG_USER] == user and run.tags[TAG_CLIENT] == client, (
            run and run.tags
        )
    # the Dagster UI's tag filter (ade/user=alice) finds alice's run and only hers
    assert [r.run_id for r in _runs(ctx, **{TAG_USER: "alice"})] == [a["run_id"]]


def test_stdio_runs_name_the_local_os_user(tmp_path: Path) -> None:
    config = tmp_path / "ade.yaml"
    config.write_text(f"home: {tmp_path / 'home'}\nmcp:\n  toolsets: [dbt-artifacts]\n")
    settings = load_settings(config, env={})
    ctx = BridgeContext.from_settings(settings)
    server = build_server(settings, ctx=ctx)  # as `ade mcp` (stdio) builds it: no token, no access control
    _add_probe(server, ctx)
    ok, answer = call_tool(server, "probe_live", {"note": "local"})
    assert ok, answer
    flush_all()
    run = ctx.live().instance().get_run_by_id(answer["run_id"])
    assert run is not None and run.tags[TAG_USER] == getpass.getuser() and run.tags[TAG_CLIENT] == "local"
    assert current_caller().user == getpass.getuser()  # nothing of the call's caller is left behind


def test_shared_token_runs_say_so(tmp_path: Path) -> None:
    token = "s" * 40
    config = tmp_path / "ade.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\nmcp:\n  toolsets: [dbt-artifacts]\n  http:\n    token: {token}\n"
    )
    settings = load_settings(config, env={})
    ctx = BridgeContext.from_settings(settings)
    with threaded_gateway(settings, lambda server: _add_probe(server, ctx)) as url:
        ok, answer = asyncio.run(acall(url, token, "probe_live", {"note": "shared"}))
    assert ok, answer
    flush_all()
    run = ctx.live().instance().get_run_by_id(answer["run_id"])
    assert run is not None and run.tags[TAG_USER] == "shared-token" and run.tags[TAG_CLIENT] == "shared-token"
