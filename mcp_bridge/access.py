"""Who is calling and what they may do: every tool classified by its effect, the caller of each call, the roles
that allow a tool, and the per-caller limits on live tools.

- **Classification.** A tool reads unless it is in `CHANGES`, the one table of tools that change something and what
  they change (`trigger`: starts a job or DAG run; `ddl`: changes Snowflake objects; `workspace`: writes files in
  ADE's workspace). A tool that is neither in `CHANGES` nor annotated `readOnlyHint: true` is unclassified: no
  role allows it (`tests/contract/test_tool_access.py` fails on one). A tool is *live* (counted by the limits) when
  it changes something or may reach a system outside ADE when called (`openWorldHint`).
- **Identity** (every transport): the call runs as its caller (`ade_platform.lib.caller`), so its audit runs are
  tagged `ade/user` and `ade/client`: the token's subject and client, `shared-token` for the shared bearer token,
  the local OS user over stdio.
- **Access** (HTTP with `auth: oidc` only): the caller's roles come from its token's scopes and groups
  (`mcp.access`); tools no role allows are absent from its `tools/list` and refused with `forbidden`.
- **Limits** (with access): live calls per minute and live calls running at once, per user; over either the call
  is refused with `rate_limited` and `retry_after_seconds` before anything runs. Per gateway replica.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastmcp.server.dependencies import get_access_token
from fastmcp.server.middleware import Middleware

from ade_platform.config import AccessSettings, CallerLimits, Effect, OidcSettings, Settings
from ade_platform.lib.caller import Caller, calling_as, local_caller
from mcp_bridge.errors import ToolFailure

if TYPE_CHECKING:
    from fastmcp import FastMCP
    from fastmcp.server.auth import AccessToken

# The tools that change something, and what (spec names; `tool_names: portable` forms match too). Every other
# tool must be annotated read-only: it reads (cached answers and live reads alike).
CHANGES: dict[str, Effect] = {
    "dbtcloud_trigger_job": "trigger",  # starts a dbt Cloud job run
    "orchestrator_trigger_dag": "trigger",  # starts an Airflow DAG run, a Prefect flow run, a Dagster job
    "execute_ddl": "ddl",  # CREATE / ALTER / DROP / UNDROP / COMMENT in Snowflake
    # reads Snowflake's metadata; writes the local DDL repository and its store snapshot
    "sync_objects": "workspace",
    # writes a run folder in the snowfakery workspace (a dburl is a sqlite file inside it)
    "snowfakery.run_recipe": "workspace",
}
_CHANGES = {name.replace(".", "_"): effect for name, effect in CHANGES.items()}
SHARED_TOKEN_CLIENT = "shared-token"
_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class ToolClass:
    effect: Effect | None  # None: unclassified, allowed to no role
    live: bool  # changes something or may reach an outside system: counted by the per-caller limits


def classify(name: str, annotations: Any) -> ToolClass:
    """What a tool does, from the CHANGES table and its MCP annotations."""
    effect: Effect | None = _CHANGES.get(name.replace(".", "_"))
    read_only = getattr(annotations, "read_only_hint", None) is True
    if effect is None and read_only:
        effect = "read"
    open_world = getattr(annotations, "open_world_hint", None) is True
    return ToolClass(effect=effect, live=effect not in (None, "read") or open_world)


# ---- who is calling -----------------------------------------------------------------------------------------
def caller_of(token: AccessToken | None, oidc: OidcSettings | None) -> Caller:
    """The caller a request's access token names; the local OS user without one (stdio, loopback HTTP)."""
    if token is None:
        return local_caller()
    claims = token.claims or {}
    if token.client_id == SHARED_TOKEN_CLIENT and not claims:
        return Caller(user=SHARED_TOKEN_CLIENT, client=SHARED_TOKEN_CLIENT)
    user_claim = oidc.user_claim if oidc else "sub"
    groups_claim = oidc.groups_claim if oidc else "groups"
    user = claims.get(user_claim) or token.subject or token.client_id
    groups = claims.get(groups_claim) or []
    if isinstance(groups, str):
        groups = groups.split()
    return Caller(
        user=str(user),
        client=str(token.client_id),
        scopes=frozenset(token.scopes or ()),
        groups=frozenset(str(g) for g in groups if isinstance(g, str | int)),
        signed_in=True,
    )


# ---- what a caller may do -----------------------------------------------------------------------------------
class AccessPolicy:
    """The roles of a caller (from its scopes and groups) and whether they allow an effect on a toolset."""

    def __init__(self, access: AccessSettings):
        self.access = access

    def roles(self, caller: Caller) -> list[str]:
        named = {*self.access.default_roles}
        for scope in caller.scopes:
            named.update(self.access.scopes.get(scope, ()))
        for group in caller.groups:
            named.update(self.access.groups.get(group, ()))
        return sorted(named)

    def allows(self, roles: Sequence[str], effect: Effect | None, toolset: str | None) -> bool:
        if effect is None:
            return False
        for name in roles:
            role = self.access.roles[name]
            if effect in role.effects and (role.toolsets is None or toolset in role.toolsets):
                return True
        return False

    def reads_anything(self, roles: Sequence[str]) -> bool:
        return any("read" in self.access.roles[name].effects for name in roles)


class CallerLimiter:
    """Live calls per user: at most `live_calls_per_minute` started in any 60 s, `concurrent_live_calls` at once.
    In memory, per gateway process (N replicas allow N times the limit)."""

    def __init__(self, limits: CallerLimits, clock: Any = time.monotonic):
        self.limits = limits
        self.clock = clock
        self._lock = threading.Lock()
        self._started: dict[str, deque[float]] = {}
        self._running: dict[str, int] = {}

    @contextlib.contextmanager
    def admitted(self, user: str) -> Iterator[None]:
        """Hold one live-call slot of `user` for the block; ToolFailure(rate_limited) when none is free."""
        with self._lock:
            now = self.clock()
            started = self._started.setdefault(user, deque())
            while started and started[0] <= now - _WINDOW_SECONDS:
                started.popleft()
            per_minute, at_once = self.limits.live_calls_per_minute, self.limits.concurrent_live_calls
            if per_minute is not None and len(started) >= per_minute:
                wait = max(1, math.ceil(started[0] + _WINDOW_SECONDS - now))
                raise _rate_limited(
                    f"{len(started)} live calls in the last minute (limit {per_minute})", wait
                )
            running = self._running.get(user, 0)
            if at_once is not None and running >= at_once:
                raise _rate_limited(f"{running} live calls of yours are running (limit {at_once})", 1)
            started.append(now)
            self._running[user] = running + 1
        try:
            yield
        finally:
            with self._lock:
                self._running[user] -= 1
                if not self._running[user]:
                    del self._running[user]
                if not self._started.get(user):
                    self._started.pop(user, None)


def _rate_limited(detail: str, wait: int) -> ToolFailure:
    return ToolFailure(
        "rate_limited",
        detail,
        f"Wait {wait} s (retry_after_seconds) and call again; mcp.access.limits sets the limits per user.",
        retry_after_seconds=wait,
    )


@dataclass
class AccessControl:
    """What the gateway enforces for signed-in callers (auth: oidc): the policy and the limits."""

    policy: AccessPolicy
    limiter: CallerLimiter

    @classmethod
    def from_settings(cls, settings: Settings) -> AccessControl:
        access = settings.mcp.access
        return cls(AccessPolicy(access), CallerLimiter(access.limits))


# ---- the middleware ---------------------------------------------------------------------------------------
class CallerAccess(Middleware):
    """Runs every call as its caller; with `control`, lists and allows only what the caller's roles allow and
    holds a live-call slot of theirs for each live call. Beside `StructuredErrors` (which is outside it)."""

    def __init__(
        self,
        settings: Settings,
        control: AccessControl | None = None,
        toolsets: Mapping[str, FastMCP] | None = None,
    ):
        self.oidc = settings.mcp.http.oidc
        self.control = control
        self.toolsets = dict(toolsets or {})
        self._toolset_of: dict[str, str] | None = None

    def caller(self) -> Caller:
        return caller_of(get_access_token(), self.oidc)

    async def _toolset(self, tool: str) -> str | None:
        if self._toolset_of is None:
            found: dict[str, str] = {}
            for name, server in self.toolsets.items():
                for listed in await server.list_tools(run_middleware=False):
                    found[listed.name] = name
            self._toolset_of = found
        return self._toolset_of.get(tool)

    async def _allowed(self, caller: Caller, roles: list[str], tool: Any) -> tuple[bool, ToolClass]:
        kind = classify(tool.name, tool.annotations)
        assert self.control is not None
        allowed = caller.signed_in and self.control.policy.allows(
            roles, kind.effect, await self._toolset(tool.name)
        )
        return allowed, kind

    async def on_call_tool(self, context, call_next):  # type: ignore[override]
        caller = self.caller()
        with calling_as(caller):
            if self.control is None:
                return await call_next(context)
            name = context.message.name
            server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
            tool = await server.get_tool(name) if server is not None else None
            if tool is None:  # unknown: FastMCP's own answer
                return await call_next(context)
            roles = self.control.policy.roles(caller)
            allowed, kind = await self._allowed(caller, roles, tool)
            if not allowed:
                raise ToolFailure(
                    "forbidden",
                    f"{name} ({kind.effect or 'unclassified'}) is not allowed for {caller.user} "
                    f"(roles: {', '.join(roles) or 'none'})",
                    roles=roles,
                    effect=kind.effect,
                )
            if not kind.live:
                return await call_next(context)
            with self.control.limiter.admitted(caller.user):
                return await call_next(context)

    async def on_list_tools(self, context, call_next):  # type: ignore[override]
        tools = await call_next(context)
        if self.control is None:
            return tools
        caller = self.caller()
        roles = self.control.policy.roles(caller)
        return [tool for tool in tools if (await self._allowed(caller, roles, tool))[0]]

    # Resources and prompts (snowfakery docs and runs, dbt Cloud artifacts) are reads: any role that reads.
    def _reads(self) -> bool:
        assert self.control is not None
        caller = self.caller()
        return caller.signed_in and self.control.policy.reads_anything(self.control.policy.roles(caller))

    async def on_read_resource(self, context, call_next):  # type: ignore[override]
        if self.control is not None and not self._reads():
            raise ToolFailure("forbidden", "reading resources needs a role that reads", roles=[])
        return await call_next(context)

    async def on_get_prompt(self, context, call_next):  # type: ignore[override]
        if self.control is not None and not self._reads():
            raise ToolFailure("forbidden", "prompts need a role that reads", roles=[])
        return await call_next(context)

    async def on_list_resources(self, context, call_next):  # type: ignore[override]
        listed = await call_next(context)
        return listed if self.control is None or self._reads() else []

    async def on_list_resource_templates(self, context, call_next):  # type: ignore[override]
        listed = await call_next(context)
        return listed if self.control is None or self._reads() else []

    async def on_list_prompts(self, context, call_next):  # type: ignore[override]
        listed = await call_next(context)
        return listed if self.control is None or self._reads() else []
