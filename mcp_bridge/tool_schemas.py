"""The tools' JSON schemas, kept on disk between starts of the gateway.

Registering a tool makes FastMCP derive its input and output schemas with pydantic: for the gateway's 63 tools
that is most of what ADE adds to a cold start (about a second on a slow machine), and FastMCP then inlines each
schema's `$ref`s again on every tools/list. Neither result changes while the code, the libraries and the
settings stay the same, so the first start writes them to `<home>/cache/tool-schemas/` and later starts
build each tool from the file, the way Python reuses bytecode while a source file is unchanged.

The key of a file covers everything a schema can depend on: the size and modification time of every source
file of `ade_platform` and `mcp_bridge`, the versions of Python, FastMCP, the MCP SDK and pydantic, and the
settings (secrets appear masked in that dump). Any change gives a new key, and the file for the old key is
removed. A file that is missing, unreadable or lacks a tool means that tool is built the normal way.

Schemas are stored in their published form (mcp_bridge/schema_form.py: input schemas inlined, output schemas
sharing a shape used twice by a `$ref` within the document, pydantic's bookkeeping dropped), so the toolset
servers are created with `dereference_schemas=False`: one pass at the first start, none per listing. A toolset
built without the cache (`build_toolset(..., cache_schemas=False)`) derives them the same way at every start,
in a cache that is never written (`ToolSchemaCache.transient`).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_type_hints

from mcp_bridge.schema_form import published_input, published_output

if TYPE_CHECKING:
    from fastmcp.tools.function_tool import FunctionTool
    from mcp.types import ToolAnnotations

    from ade_platform.config import Settings

log = logging.getLogger(__name__)
_FORMAT = 2  # bump when the layout of a file changes
_PACKAGES = ("ade_platform", "mcp_bridge")
_LIBRARIES = ("fastmcp", "mcp", "mcp-types", "pydantic", "pydantic-core")


def source_fingerprint() -> str:
    """Size and modification time of every source file of the platform's packages (~2 ms for ~200 files)."""
    digest = hashlib.sha256()
    for package in _PACKAGES:
        root = Path(sys.modules[package].__file__ or "").parent
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith(".py"):
                    stat = os.stat(os.path.join(folder, name))
                    rel = os.path.relpath(os.path.join(folder, name), root)
                    digest.update(f"{package}/{rel}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


@functools.cache
def code_fingerprint() -> str:
    """This process's code: the cache format, Python, the schema-deriving libraries and our sources."""
    import mcp_bridge  # noqa: F401  (the fingerprint walks the packages' folders)

    digest = hashlib.sha256(f"{_FORMAT}\n{sys.version}\n".encode())
    for library in _LIBRARIES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            digest.update(f"{library}={metadata.version(library)}\n".encode())
    digest.update(source_fingerprint().encode())
    return digest.hexdigest()


def cache_key(settings: Settings, toolset: str) -> str:
    digest = hashlib.sha256(f"{code_fingerprint()}\n{toolset}\n".encode())
    digest.update(settings.model_dump_json().encode())
    return digest.hexdigest()[:24]


class ToolSchemaCache:
    """The schemas of one toolset's tools: read at construction, written by `save` when a tool was built."""

    def __init__(self, folder: Path | None, toolset: str, key: str):
        self.folder = folder
        self.toolset = toolset
        self.path = folder / f"{toolset}-{key}.json" if folder is not None else None
        self.entries: dict[str, dict[str, Any]] = self._load()
        self.built: list[str] = []  # tools whose schemas were derived by pydantic at this start

    @classmethod
    def for_settings(cls, settings: Settings, toolset: str) -> ToolSchemaCache:
        return cls(settings.home / "cache" / "tool-schemas", toolset, cache_key(settings, toolset))

    @classmethod
    def transient(cls, toolset: str) -> ToolSchemaCache:
        """Derives every schema in the published form and keeps nothing."""
        return cls(None, toolset, "")

    def _load(self) -> dict[str, dict[str, Any]]:
        if self.path is None:
            return {}
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        tools = document.get("tools") if isinstance(document, dict) else None
        if not isinstance(tools, dict):
            return {}
        return {name: entry for name, entry in tools.items() if _is_entry(entry)}

    def tool(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None,
        annotations: ToolAnnotations | None,
        output_schema: Any,
        task: bool = False,
    ) -> FunctionTool:
        """The FastMCP tool of `fn`, from the cached schemas when they are there, else derived and recorded.
        `task`: the tool may run as a task (mcp_bridge/tasks.py; `fn` is then a coroutine)."""
        name = name or fn.__name__
        entry = self.entries.get(name)
        if entry is not None:
            return _tool_from_entry(fn, name, annotations, entry, task)
        from fastmcp.tools.function_tool import FunctionTool

        if isinstance(output_schema, DeferredSchema):
            output_schema = output_schema.resolve()
        kwargs: dict[str, Any] = {} if output_schema is None else {"output_schema": output_schema}
        tool = FunctionTool.from_function(
            fn, name=name, annotations=annotations, task=task, run_in_thread=not task, **kwargs
        )
        tool = tool.model_copy(
            update={
                "parameters": published_input(tool.parameters),
                "output_schema": published_output(tool.output_schema),
            }
        )
        self.entries[name] = {
            "description": tool.description,
            "parameters": tool.parameters,
            "output_schema": tool.output_schema,
        }
        self.built.append(name)
        return tool

    def save(self) -> None:
        """Write the file when this start derived any schema; drop the files of this toolset's older keys."""
        if not self.built or self.folder is None or self.path is None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            document = {"format": _FORMAT, "toolset": self.toolset, "tools": self.entries}
            fd, tmp = tempfile.mkstemp(prefix=f".{self.toolset}-", dir=self.folder)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(document, out, sort_keys=True)
            os.replace(tmp, self.path)  # atomic: a replica starting now reads the old file or the new one
            for stale in self.folder.glob(f"{self.toolset}-*.json"):
                if stale != self.path:
                    stale.unlink(missing_ok=True)
        except OSError as error:  # a read-only home only costs the next start the derivation again
            log.debug("tool schema cache not written: %s", error)
        self.built = []


class DeferredSchema:
    """An output schema named at registration but derived only when the tool's schemas are not cached."""

    def __init__(self, derive: Callable[[], dict[str, Any]]):
        self._derive = derive

    def resolve(self) -> dict[str, Any]:
        return self._derive()


def _is_entry(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("parameters"), dict)
        and (entry.get("output_schema") is None or isinstance(entry.get("output_schema"), dict))
        and (entry.get("description") is None or isinstance(entry.get("description"), str))
    )


def _tool_from_entry(
    fn: Callable[..., Any],
    name: str,
    annotations: ToolAnnotations | None,
    entry: dict[str, Any],
    task: bool = False,
) -> FunctionTool:
    """The tool FastMCP's `from_function` would build, with the schemas taken from the cache.

    Only the schema derivation is skipped: the function gets the same Context injection, and its arguments
    are validated by FastMCP at call time exactly as before (that TypeAdapter is built on the first call).
    """
    from fastmcp.server.dependencies import transform_context_annotations
    from fastmcp.tools.function_tool import FunctionTool
    from fastmcp.utilities.tasks import TaskConfig

    return_type = inspect.signature(fn).return_annotation
    if isinstance(return_type, str):  # `from __future__ import annotations`
        with contextlib.suppress(Exception):
            return_type = get_type_hints(fn, include_extras=True).get("return", return_type)
    return FunctionTool(
        fn=transform_context_annotations(fn),
        return_type=return_type,
        name=name,
        description=entry["description"],
        parameters=entry["parameters"],
        output_schema=entry["output_schema"],
        annotations=annotations,
        tags=set(),
        task_config=TaskConfig.from_bool(task),
        run_in_thread=not task,
    )
