"""Shared shape of a toolset: one FastMCP sub-server per spec server, servable alone or mounted."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from fastmcp import FastMCP
from mcp.types import ToolAnnotations

from ade_platform import __version__
from mcp_bridge.errors import StructuredErrors
from mcp_bridge.tasks import LazyTasks, preload_tasks, task_body
from mcp_bridge.tool_schemas import DeferredSchema, ToolSchemaCache
from mcp_bridge.toolsets.schemas.batch import deferred_schemas_of
from mcp_bridge.toolsets.schemas.paging import PARAMETERS as PAGING_PARAMETERS
from mcp_bridge.toolsets.schemas.provenance import PROVENANCE_KEYS

F = TypeVar("F", bound=Callable[..., Any])
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)
READ_ONLY_OPEN_WORLD = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=True
)
# starts a run in an external system: not idempotent (two calls, two runs), destroys nothing
TRIGGER = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True)
# changes objects in an external system (DDL): each call may destroy what the last one left
DESTRUCTIVE = ToolAnnotations(
    readOnlyHint=False, destructiveHint=True, idempotentHint=False, openWorldHint=True
)
# rewrites a local copy of an external system's objects: the same call twice leaves the same files
SYNC = ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=True, openWorldHint=True)

# The schema cache of the toolset being built (set by `mcp_bridge.toolsets.build_toolset`), so every toolset
# module's `new_toolset(...)` call picks it up without passing it through each build function.
_SCHEMA_CACHE: contextvars.ContextVar[ToolSchemaCache | None] = contextvars.ContextVar(
    "ade_tool_schema_cache", default=None
)


@contextlib.contextmanager
def schema_cache(cache: ToolSchemaCache | None) -> Iterator[None]:
    token = _SCHEMA_CACHE.set(cache)
    try:
        yield
    finally:
        _SCHEMA_CACHE.reset(token)
        if cache is not None:
            cache.save()


class Toolset(FastMCP):
    """A FastMCP server whose `@tool(name=..., annotations=..., output_schema=...)` registrations take their
    schemas from the tool schema cache when it holds them (mcp_bridge/tool_schemas.py). Any other use of the
    decorator is FastMCP's own."""

    def __init__(
        self,
        name: str,
        instructions: str,
        cache: ToolSchemaCache | None,
        parameters: dict[str, str] | None = None,
        cites_snapshots: bool = True,
    ):
        # Schemas take their published form once, at registration (mcp_bridge/schema_form.py), not on every
        # tools/list; without a cache file they are derived in a cache that is never written.
        super().__init__(
            name,
            # served alone (`ade mcp --server`), a toolset says once what its shared parameters mean
            instructions="\n".join(
                [
                    instructions.rstrip(),
                    *([shared_parameters(parameters)] if parameters else []),
                    *([PROVENANCE_KEYS] if cites_snapshots else []),
                    PAGING_PARAMETERS,
                ]
            ),
            version=__version__,  # a toolset served alone (`ade mcp --server`) names ADE's version too
            # an exception we did not anticipate must not leak its message to the agent
            mask_error_details=True,
            middleware=[StructuredErrors()],
            dereference_schemas=False,
        )
        self.schema_cache = cache or ToolSchemaCache.transient(name)
        # parameters several of its tools take, described here once instead of in each tool's input schema
        self.shared_parameters: dict[str, str] = dict(parameters or {})
        # work that only makes later calls faster, started after the gateway's first tools/list
        # (mcp_bridge/startup.py)
        self.warm_ups: list[Callable[[], None]] = []
        # the tasks extension, registered with its first tool that may run as a task (mcp_bridge/tasks.py)
        self.tasks: LazyTasks | None = None

    def tool(self, name_or_fn: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        cache = self.schema_cache
        if name_or_fn is not None or set(kwargs) - {"name", "annotations", "output_schema", "task"}:
            if isinstance(kwargs.get("output_schema"), DeferredSchema):
                kwargs["output_schema"] = kwargs["output_schema"].resolve()
            return super().tool(name_or_fn, **kwargs)

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            task = bool(kwargs.get("task"))
            name = kwargs.get("name") or fn.__name__
            if task and self.tasks is None:
                self.tasks = LazyTasks()
                self.add_extension(self.tasks)
                self.warm_ups.append(preload_tasks)  # a first task then starts in milliseconds, not seconds
            self.add_tool(
                cache.tool(
                    task_body(fn, name) if task else fn,
                    name=name,
                    annotations=kwargs.get("annotations"),
                    output_schema=kwargs.get("output_schema"),
                    task=task,
                )
            )
            return fn

        return register


def new_toolset(
    name: str,
    instructions: str,
    tools: object | None = None,
    parameters: dict[str, str] | None = None,
    cites_snapshots: bool = True,
) -> FastMCP:
    """The server of a toolset; with `tools`, an object whose `@tool` methods it registers (`add_tools`).
    `parameters` describes, once, the parameters several of its tools take (their types carry no description):
    the toolset's instructions say it, and the gateway's when it is mounted. A toolset whose answers never
    cite a store snapshot (`cites_snapshots=False`) leaves the provenance keys out of its instructions."""
    server = Toolset(name, instructions, _SCHEMA_CACHE.get(), parameters, cites_snapshots)
    if tools is not None:
        add_tools(server, tools)
    return server


def shared_parameters(parameters: dict[str, str], toolset: str | None = None) -> str:
    where = f"{toolset} tools" if toolset else "Tools"
    return f"{where} share these parameters: " + " ".join(f"{k}: {v}" for k, v in parameters.items())


# ---- a toolset package's tools: methods of one class, marked where they are defined ------------------------
def tool(annotations: ToolAnnotations, *, answer: Any = None, task: bool = False) -> Callable[[F], F]:
    """Mark a method of a toolset's tools class as an MCP tool: its name, docstring and parameters are the
    published tool's. `answer` is the TypedDict the tool returns, published as its output schema (tools that
    return a pydantic model get theirs from the return annotation). `task`: a long wait that a client on the
    current revision may run as a task (mcp_bridge/tasks.py); a plain call otherwise."""

    def mark(fn: F) -> F:
        fn.mcp_tool_options = {"annotations": annotations, "answer": answer, "task": task}  # type: ignore[attr-defined]
        return fn

    return mark


def add_tools(server: FastMCP, tools: object, *, published_name: Callable[[str], str] | None = None) -> None:
    """Register every method of `tools` marked with `@tool`, bound to it, in the order its class defines them,
    named `published_name(method)` when given. The answers' schemas are derived in one pydantic pass, and only
    when the schema cache lacks one."""
    marked = [
        (name, options)
        for name, member in vars(type(tools)).items()
        if (options := getattr(member, "mcp_tool_options", None)) is not None
    ]
    answers = list(dict.fromkeys(o["answer"] for _, o in marked if o["answer"] is not None))
    schemas = deferred_schemas_of(*answers) if answers else {}
    for name, options in marked:
        kwargs: dict[str, Any] = {"annotations": options["annotations"]}
        if options["answer"] is not None:
            kwargs["output_schema"] = schemas[options["answer"]]
        if published_name is not None:
            kwargs["name"] = published_name(name)
        if options.get("task"):
            kwargs["task"] = True
        server.tool(**kwargs)(getattr(tools, name))
