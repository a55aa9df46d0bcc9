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
  is refused with `rate_limited` and `retry_after_seconds` before anything runs. Per gateway replica. CPU-heavy
  reads (`HEAVY`: agent patterns, the Snowfakery sandbox) have limits of their own on every transport.
- **Resources and prompts** belong to the toolset that registers them and are reads of it: listed and served only
  to callers whose roles read that toolset; a resource whose read reaches an outside system (`LIVE_RESOURCES`)
  counts as a live call.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
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
    # run a recipe to keep its diagram / CumulusCI mapping in a new run folder (served as run resources)
    "snowfakery.render_diagram": "workspace",
    "snowfakery.generate_mapping": "workspace",
    # acknowledges, resolves, reopens or dismisses an incident (the store's incident journal; audited)
    "incident_update": "incident",
}
_CHANGES = {name.replace(".", "_"): effect for name, effect in CHANGES.items()}
# Reads whose cost is the gateway's own CPU, set by the agent's input: patterns compiled and run over a log or
# over every column name, recipes run in the sandbox's child. Limited per caller on every transport (stdio and the
# shared token are one caller each): `mcp.access.limits.heavy_calls_per_minute` / `concurrent_heavy_calls`.
HEAVY: frozenset[str] = frozenset(
    {
        "orchestrator_detect_patterns",  # agent regexes over a log of up to 2 MB
        "dbt_scan_pii_risk",  # agent regexes (extra_patterns) over every column of the catalog
        "snowfakery.validate_recipe",
        "snowfakery.explain_errors",  # validates first
        "snowfakery.run_recipe",
        "snowfakery.render_diagram",
        "snowfakery.generate_mapping",
        "snowfakery.draft_recipe",  # validates each draft
    }
)
_HEAVY = {name.replace(".", "_") for name in HEAVY}
# Resources (URI templates) whose read reaches a system outside ADE: audited reads, counted as live calls.
LIVE_RESOURCES: frozenset[str] = frozenset({"dbtcloud://runs/{run_id}/artifacts/{name}"})
SHARED_TOKEN_CLIENT = "shared-token"
_WINDOW_SECONDS = 60.0


@dataclass(frozen=True)
class ToolClass:
    effect: Effect | None  # None: unclassified, allowed to no role
    live: bool  # changes something or may reach an outside system: counted by the per-caller limits
    heavy: bool = False  # CPU-heavy on the gateway: counted by the heavy-call limits


def classify(name: str, annotations: Any) -> ToolClass:
    """What a tool does, from the CHANGES table and its MCP annotations."""
    effect: Effect | None = _CHANGES.get(name.replace(".", "_"))
    read_only = getattr(annotations, "read_only_hint", None) is True
    if effect is None and read_only:
        effect = "read"
    open_world = getattr(annotations, "open_world_hint", None) is True
    heavy = name.replace(".", "_") in _HEAVY
    return ToolClass(effect=effect, live=effect not in (None, "read") or open_world, heavy=heavy)


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
    return Caller(
        user=str(user),
        client=str(token.client_id),
        scopes=frozenset(token_scopes(claims, token.scopes)),
        groups=frozenset(claim_values(claims.get(groups_claim))),
        signed_in=True,
    )


def claim_values(value: Any, *, space_separated: bool = False) -> list[str]:
    """A multi-valued claim as the identity provider sent it: an array is its string (or integer) items; a string
    is one value, unless the claim is defined as a space-separated list (OAuth's `scope`); anything else (an
    object, a number, a boolean) names nothing. A group called "Data Platform" stays one group."""
    if isinstance(value, str):
        return value.split() if space_separated else ([value] if value else [])
    if isinstance(value, list):
        return [str(item) for item in value if isinstance(item, str | int) and not isinstance(item, bool)]
    return []


def token_scopes(claims: Mapping[str, Any], verified: Sequence[str] | None) -> list[str]:
    """The token's scopes: `scope` (RFC 9068 / RFC 8693: one space-separated string), else `scp` (Entra ID: a
    space-separated string; Okta and others: an array), the first present as FastMCP's verifier reads them.
    Without either claim, what the verifier found (the shared token has none)."""
    for claim in ("scope", "scp"):
        if claim in claims:
            return claim_values(claims[claim], space_separated=True)
    return [scope for scope in verified or () if isinstance(scope, str)]


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
    """Calls per user of one class (live, heavy): at most `per_minute` started in any 60 s, `at_once` running at
    once (None: no limit). In memory, per gateway process (N replicas allow N times the limit)."""

    def __init__(
        self,
        per_minute: int | None,
        at_once: int | None,
        *,
        kind: str = "live",
        clock: Any = time.monotonic,
    ):
        self.per_minute, self.at_once, self.kind = per_minute, at_once, kind
        self.clock = clock
        self._lock = threading.Lock()
        self._started: dict[str, deque[float]] = {}
        self._running: dict[str, int] = {}

    @classmethod
    def live(cls, limits: CallerLimits) -> CallerLimiter:
        return cls(limits.live_calls_per_minute, limits.concurrent_live_calls, kind="live")

    @classmethod
    def heavy(cls, limits: CallerLimits) -> CallerLimiter:
        return cls(limits.heavy_calls_per_minute, limits.concurrent_heavy_calls, kind="CPU-heavy")

    @contextlib.contextmanager
    def admitted(self, user: str, *, counted: bool = True) -> Iterator[None]:
        """Hold one slot of `user` for the block; ToolFailure(rate_limited) when none is free. `counted=False`:
        a running slot only, not a call started (a task's run, whose call was counted when it was made)."""
        with self._lock:
            now = self.clock()
            started = self._started.setdefault(user, deque())
            while started and started[0] <= now - _WINDOW_SECONDS:
                started.popleft()
            per_minute, at_once = self.per_minute, self.at_once
            if not counted:
                per_minute = None
            if per_minute is not None and len(started) >= per_minute:
                wait = max(1, math.ceil(started[0] + _WINDOW_SECONDS - now))
                if not started:
                    self._started.pop(user, None)
                raise _rate_limited(
                    f"{len(started)} {self.kind} calls in the last minute (limit {per_minute})", wait
                )
            running = self._running.get(user, 0)
            if at_once is not None and running >= at_once:
                if not started:
                    self._started.pop(user, None)
                raise _rate_limited(f"{running} {self.kind} calls of yours are running (limit {at_once})", 1)
            if counted:
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
        return cls(AccessPolicy(access), CallerLimiter.live(access.limits))


_SURFACE_HINT = (
    "Resources and prompts belong to a toolset: they need a role that reads it (mcp.access in ade.yaml grants "
    "roles to scopes and groups)."
)


# ---- the middleware ---------------------------------------------------------------------------------------
@dataclass
class _Surfaces:
    """Which toolset registered each tool, resource, resource template and prompt (built on first use)."""

    tools: dict[str, str]
    resources: dict[str, str]  # uri -> toolset
    templates: list[tuple[Any, str]]  # (ResourceTemplate, toolset)
    prompts: dict[str, str]
    # what each tool does, classified once: a call is then a dict lookup, not a search of the gateway's tools
    classes: dict[str, ToolClass] = field(default_factory=dict)

    def resource(self, uri: str) -> tuple[str | None, str | None]:
        """(toolset, the URI or template it matched) of a URI; (None, None) for one no toolset serves."""
        if uri in self.resources:
            return self.resources[uri], uri
        for template, toolset in self.templates:
            if template.matches(uri) is not None:
                return toolset, template.uri_template
        return None, None


class CallerAccess(Middleware):
    """Runs every call as its caller and holds a CPU-heavy slot of theirs for each heavy call; with `control`,
    lists and allows only the tools, resources and prompts the caller's roles allow and holds a live-call slot of
    theirs for each live call and live resource read. Beside `StructuredErrors` (which is outside it)."""

    def __init__(
        self,
        settings: Settings,
        control: AccessControl | None = None,
        toolsets: Mapping[str, FastMCP] | None = None,
    ):
        self.oidc = settings.mcp.http.oidc
        self.control = control
        self.toolsets = dict(toolsets or {})
        self.heavy = CallerLimiter.heavy(settings.mcp.access.limits)
        self._surfaces: _Surfaces | None = None

    def caller(self) -> Caller:
        return caller_of(get_access_token(), self.oidc)

    @contextlib.contextmanager
    def task_slots(self, name: str, caller: Caller) -> Iterator[None]:
        """The running slots a task's run holds (mcp_bridge/tasks.py), as its call would have: the call was
        admitted (and counted) when the task was created; its run holds a slot of the live and heavy limits."""
        with contextlib.ExitStack() as slots:
            kind = self._surfaces.classes.get(name) if self._surfaces is not None else None
            if self.control is not None and kind is not None and kind.live:
                slots.enter_context(self.control.limiter.admitted(caller.user, counted=False))
            if name.replace(".", "_") in _HEAVY:
                slots.enter_context(self.heavy.admitted(caller.user, counted=False))
            yield

    async def surfaces(self) -> _Surfaces:
        if self._surfaces is None:
            found = _Surfaces({}, {}, [], {})
            for name, server in self.toolsets.items():
                for tool in await server.list_tools(run_middleware=False):
                    found.tools[tool.name] = name
                    found.classes[tool.name] = classify(tool.name, tool.annotations)
                for resource in await server.list_resources(run_middleware=False):
                    found.resources[str(resource.uri)] = name
                for template in await server.list_resource_templates(run_middleware=False):
                    found.templates.append((template, name))
                for prompt in await server.list_prompts(run_middleware=False):
                    found.prompts[prompt.name] = name
            self._surfaces = found
        return self._surfaces

    async def _allowed(self, caller: Caller, roles: list[str], tool: Any) -> tuple[bool, ToolClass]:
        kind = classify(tool.name, tool.annotations)
        assert self.control is not None
        allowed = caller.signed_in and self.control.policy.allows(
            roles, kind.effect, (await self.surfaces()).tools.get(tool.name)
        )
        return allowed, kind

    def _reads(self, caller: Caller, roles: list[str], toolset: str | None) -> bool:
        assert self.control is not None
        return caller.signed_in and self.control.policy.allows(roles, "read", toolset)

    async def on_call_tool(self, context, call_next):  # type: ignore[override]
        caller = self.caller()
        with calling_as(caller), contextlib.ExitStack() as slots:
            name = context.message.name
            if self.control is not None:
                found = await self.surfaces()
                kind = found.classes.get(name)
                if kind is None:  # not a toolset's: one the gateway itself registered, or none at all
                    server = context.fastmcp_context.fastmcp if context.fastmcp_context else None
                    tool = await server.get_tool(name) if server is not None else None
                    if tool is None:  # unknown: FastMCP's own answer
                        return await call_next(context)
                    kind = found.classes[name] = classify(tool.name, tool.annotations)
                roles = self.control.policy.roles(caller)
                allowed = caller.signed_in and self.control.policy.allows(
                    roles, kind.effect, found.tools.get(name)
                )
                if not allowed:
                    raise ToolFailure(
                        "forbidden",
                        f"{name} ({kind.effect or 'unclassified'}) is not allowed for {caller.user} "
                        f"(roles: {', '.join(roles) or 'none'})",
                        roles=roles,
                        effect=kind.effect,
                    )
                if kind.live:
                    slots.enter_context(self.control.limiter.admitted(caller.user))
            # by name: every transport, without looking the tool up (stdio and the shared token have no control)
            if name.replace(".", "_") in _HEAVY:
                slots.enter_context(self.heavy.admitted(caller.user))
            return await call_next(context)

    async def on_list_tools(self, context, call_next):  # type: ignore[override]
        tools = await call_next(context)
        if self.control is None:
            return tools
        caller = self.caller()
        roles = self.control.policy.roles(caller)
        return [tool for tool in tools if (await self._allowed(caller, roles, tool))[0]]

    # Resources and prompts are reads of the toolset that registered them: the same decision as its read tools.
    async def on_read_resource(self, context, call_next):  # type: ignore[override]
        caller = self.caller()
        with calling_as(caller):  # a live resource's audit run names its reader
            if self.control is None:
                return await call_next(context)
            uri = str(context.message.uri)
            toolset, matched = (await self.surfaces()).resource(uri)
            roles = self.control.policy.roles(caller)
            if not self._reads(caller, roles, toolset):
                raise ToolFailure(
                    "forbidden",
                    f"reading {toolset or 'this'} resource is not allowed for {caller.user} "
                    f"(roles: {', '.join(roles) or 'none'})",
                    _SURFACE_HINT,
                    roles=roles,
                    effect="read",
                )
            if matched not in LIVE_RESOURCES:
                return await call_next(context)
            with self.control.limiter.admitted(caller.user):
                return await call_next(context)

    async def on_get_prompt(self, context, call_next):  # type: ignore[override]
        caller = self.caller()
        with calling_as(caller):
            if self.control is None:
                return await call_next(context)
            name = context.message.name
            toolset = (await self.surfaces()).prompts.get(name)
            roles = self.control.policy.roles(caller)
            if not self._reads(caller, roles, toolset):
                raise ToolFailure(
                    "forbidden",
                    f"prompt {name} is not allowed for {caller.user} (roles: {', '.join(roles) or 'none'})",
                    _SURFACE_HINT,
                    roles=roles,
                    effect="read",
                )
            return await call_next(context)

    async def _listed(self, listed: Any, toolset_of: Any) -> Any:
        caller = self.caller()
        roles = self.control.policy.roles(caller)
        return [item for item in listed if self._reads(caller, roles, toolset_of(item))]

    async def on_list_resources(self, context, call_next):  # type: ignore[override]
        listed = await call_next(context)
        if self.control is None:
            return listed
        found = await self.surfaces()
        return await self._listed(listed, lambda r: found.resources.get(str(r.uri)))

    async def on_list_resource_templates(self, context, call_next):  # type: ignore[override]
        listed = await call_next(context)
        if self.control is None:
            return listed
        owner = {template.uri_template: toolset for template, toolset in (await self.surfaces()).templates}
        return await self._listed(listed, lambda t: owner.get(t.uri_template))

    async def on_list_prompts(self, context, call_next):  # type: ignore[override]
        listed = await call_next(context)
        if self.control is None:
            return listed
        found = await self.surfaces()
        return await self._listed(listed, lambda p: found.prompts.get(p.name))
