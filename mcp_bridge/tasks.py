"""What the gateway uses of MCP 2026-07-28 beyond the core: cache hints on list results, and long waits as tasks.

- **Cache hints** (SEP-2549). The gateway registers its tools, resources, templates and prompts once, at start,
  and never changes them while it runs (it sends no list_changed), so a list result carries `ttlMs` (the
  client may reuse it) with scope `private` (with `auth: oidc` each caller sees the part of it its roles allow).
  A resource's *read* carries no hint: cached answers follow the store, live ones the outside system.
- **Tasks** (the `io.modelcontextprotocol/tasks` extension, SEP-2663). A tool marked `@tool(..., task=True)`
  answers a client that opts in on the current revision with a task id at once; the client polls `tasks/get`
  (its progress is the task's `statusMessage`), reads the result there, or cancels with `tasks/cancel`. Without
  the opt-in (and on 2025-11-25, which has no extensions) it is a plain call. Access is decided before the task
  is created (the gateway's middleware runs first); tasks live in the gateway's process (in-memory backend),
  under the caller's token scope, with unguessable ids.

fastmcp-tasks costs ~1.5 s of imports (it loads FastMCP's client and its sign-in stack), more than the whole
gateway start: never before the tool list (`tests/contract/test_startup_imports.py`). It is imported by a
warm-up once the first listing is answered, and its worker starts at the first call that asks for a task.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import os
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from fastmcp.server.extensions import MethodBinding, ServerExtension
from fastmcp.utilities.tasks import TASKS_EXTENSION_ID
from mcp_types import RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

from ade_platform.lib.caller import Caller, calling_as

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from mcp_bridge.access import CallerAccess

# How long a client may reuse a list result. The lists never change while the gateway runs; an hour, not more,
# because a restarted gateway (a new config, an upgrade) may list other tools under the same address.
LIST_TTL_SECONDS = 3600
LIST_METHODS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list", "server/discover")
_MODERN = frozenset(MODERN_PROTOCOL_VERSIONS)
# Inside a task's worker: the extension that runs it (who its caller is, the slots its run holds).
_WORKER: ContextVar[LazyTasks | None] = ContextVar("ade_task_worker", default=None)


def hint_list_results(server: FastMCP) -> None:
    """Cache hints on the list results (and server/discover) only, not on resources/read. FastMCP's
    `cache_ttl` hints every cacheable method alike, resources/read included; the SDK's server takes the map."""
    from mcp.server.caching import CacheHint

    hint = CacheHint(ttl_ms=LIST_TTL_SECONDS * 1000, scope="private")
    server._mcp_server.cache_hints.update(dict.fromkeys(LIST_METHODS, hint))


# ---- tasks --------------------------------------------------------------------------------------------------
class _TaskId(RequestParams):
    model_config = ConfigDict(populate_by_name=True)
    task_id: str = Field(alias="taskId")


class _TaskUpdate(_TaskId):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class LazyTasks(ServerExtension):
    """The tasks extension, advertised at once and loaded at the first call that asks for a task.

    `access` is the gateway's `CallerAccess`: inside a task's worker it names the caller from the access token
    the task was created with, so the task's audit runs name the same caller as a plain call's would, and holds
    the caller's running slots (live, heavy) while the task runs."""

    identifier = TASKS_EXTENSION_ID
    # a toolset mounted on another server (not how the gateway serves them) brings its tasks along
    auto_register = True

    def __init__(self, access: CallerAccess | None = None):
        self.access = access
        self._real: Any = None
        self._started: asyncio.Event | None = None
        self._stop: asyncio.Event | None = None
        self._runner: asyncio.Task[None] | None = None
        self._failed: BaseException | None = None
        self._context: contextvars.Context | None = None

    def caller(self) -> Caller:
        return self.access.caller() if self.access is not None else _token_caller()

    def slots(self, name: str, caller: Caller) -> contextlib.AbstractContextManager[None]:
        return self.access.task_slots(name, caller) if self.access is not None else contextlib.nullcontext()

    def clone(self) -> LazyTasks:
        return LazyTasks(self.access)  # nothing of a started engine: each server starts its own

    def settings(self) -> dict[str, Any]:
        return {}

    def methods(self) -> Sequence[MethodBinding]:
        def binding(method: str, params: type, handler: Any) -> MethodBinding:
            return MethodBinding(
                method=method, params_type=params, handler=handler, protocol_versions=_MODERN
            )

        return [
            binding("tasks/get", _TaskId, self._get),
            binding("tasks/update", _TaskUpdate, self._update),
            binding("tasks/cancel", _TaskId, self._cancel),
        ]

    async def _delegate(self, name: str, ctx: Any, params: Any) -> Any:
        real = await self._ensure()
        from fastmcp_tasks import models

        kind = models.UpdateTaskParams if name == "_handle_update" else models.GetTaskParams
        return await getattr(real, name)(ctx, kind.model_validate(params.model_dump(by_alias=True)))

    async def _get(self, ctx: Any, params: _TaskId) -> Any:
        return await self._delegate("_handle_get", ctx, params)

    async def _update(self, ctx: Any, params: _TaskUpdate) -> Any:
        return await self._delegate("_handle_update", ctx, params)

    async def _cancel(self, ctx: Any, params: _TaskId) -> Any:
        return await self._delegate("_handle_cancel", ctx, params)

    async def intercept_tool_call(self, params: Any, context: Any, call_next: Any) -> Any:
        """A plain call unless the tool takes tasks and this request opted in, on a revision that has them."""
        rc = context.request_context
        opted_in = (
            rc is not None
            and rc.protocol_version in _MODERN
            and context.client_extension_settings(TASKS_EXTENSION_ID) is not None
        )
        if not opted_in:
            return await call_next()
        tool = await context.fastmcp.get_tool(params.name)
        if tool is None or not tool.task_config.supports_tasks():
            return await call_next()
        real = await self._ensure()
        return await real.intercept_tool_call(params, context, call_next)

    async def _ensure(self) -> Any:
        """Load fastmcp-tasks and start its worker (once, in a task of its own that lives until the gateway's
        lifespan ends: its Docket and worker are entered and left in the same task)."""
        if self._started is None:
            self._started, self._stop = asyncio.Event(), asyncio.Event()
            # In the server lifespan's context, not this request's: the worker's tasks inherit it, and a
            # request's (its HTTP request, hence its token) would name that caller in every task's run.
            context = (self._context or contextvars.Context()).copy()
            self._runner = asyncio.get_running_loop().create_task(
                self._run(), name="ade-tasks", context=context
            )
        await self._started.wait()
        if self._failed is not None:
            raise self._failed
        return self._real

    async def _run(self) -> None:
        started, stop = self._started, self._stop  # this run's: the lifespan's end clears the attributes
        assert started is not None and stop is not None
        try:
            import anyio

            # the import is seconds of CPU: not on the event loop, which serves other calls meanwhile
            module = await anyio.to_thread.run_sync(preload_tasks)
            # memory:// is one process's backend; the name keeps two gateways in one process (tests) apart
            real = module.TasksExtension(url="memory://", name=f"ade-{os.getpid()}-{uuid.uuid4().hex[:8]}")
            real._bind(self.server)
            _WORKER.set(self)  # inherited by the worker, which runs the tasks
            async with real.lifespan():
                self._real = real
                started.set()
                await stop.wait()
        except Exception as exc:  # a task call then fails with it; plain calls are unaffected
            self._failed = exc
        finally:
            started.set()

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        self._context = contextvars.copy_context()
        try:
            yield
        finally:
            if self._runner is not None and self._stop is not None:
                self._stop.set()
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    await asyncio.wait_for(self._runner, timeout=5)
            # the server may be started again (in-memory clients start it per connection): load afresh then
            self._real = self._started = self._stop = self._runner = self._failed = self._context = None


def _token_caller() -> Caller:
    """The caller of a toolset served without the gateway's access settings: named by its token's subject."""
    from fastmcp.server.dependencies import get_access_token

    from mcp_bridge.access import caller_of

    return caller_of(get_access_token(), None)


def preload_tasks() -> Any:
    """Import fastmcp-tasks (a warm-up: after the first tools/list, in the background)."""
    import fastmcp_tasks

    return fastmcp_tasks


def task_body(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """The body of tool `name` that may run as a task: always a coroutine (a task's body must be one; a
    synchronous tool runs in a worker thread, as FastMCP runs it in a plain call). In a task's worker it runs as
    the task's caller, holding the caller's running slots, and a failure takes the structured error shape: what
    the gateway's middleware does for a plain call (the worker runs the body outside the middleware)."""
    from mcp_bridge.errors import to_tool_error

    is_async = inspect.iscoroutinefunction(fn)

    @functools.wraps(fn)
    async def body(*args: Any, **kwargs: Any) -> Any:
        worker = _WORKER.get()
        if worker is None:  # a plain call: the middleware set the caller, holds the slots and maps errors
            return await _call(fn, is_async, args, kwargs)
        try:
            with calling_as(worker.caller()) as caller, worker.slots(name, caller):
                return await _call(fn, is_async, args, kwargs)
        except Exception as exc:
            raise to_tool_error(exc, name) from None

    return body


async def _call(fn: Callable[..., Any], is_async: bool, args: Any, kwargs: Any) -> Any:
    if is_async:
        return await fn(*args, **kwargs)
    import anyio

    from ade_platform.lib import cancel

    # A cancelled call stops waiting at once and tells its thread, which stops what it started (the Snowfakery
    # job) and records its audit run as `cancelled` (ade_platform/lib/cancel.py).
    stop = threading.Event()
    token = cancel.CANCELLED.set(stop)
    try:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs), abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        stop.set()
        raise
    finally:
        cancel.CANCELLED.reset(token)
