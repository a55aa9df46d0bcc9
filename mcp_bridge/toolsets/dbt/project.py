"""dbt-project: read a dbt project's files: model SQL, schema YAML, project config (spec category 6).

Every path stays inside the project root (settings.dbt.project_dir): `..`, absolute paths and symlinks
that lead out of it are refused with path_not_allowed, and files that hold credentials (profiles.yml,
.env, keys: `ade_platform.lib.file_secrets`) are never served; every other file's secrets come back as
***. Compiled SQL comes from <target>/compiled/<package>/<path> (or the newest per-invocation folder under
the target path, where dagster-dbt builds write), else from the compiled
code recorded in the manifest or in the last Dagster build's manifest; `compiled_source` says which.
`fs_list_models` answers from the stored manifest (tags, schema and materialization live there) and falls
back to the model files on disk when no manifest was materialized.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from pydantic import Field

from ade_platform.lib import paging
from ade_platform.lib.dbt import project_files as pf
from ade_platform.lib.dbt.lookup import UnresolvedNode
from ade_platform.lib.file_secrets import TooLarge, redact_document, redact_text
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY, new_toolset, tool
from mcp_bridge.toolsets.dbt.inputs import DbtInputs, as_result, derive
from mcp_bridge.toolsets.schemas.dbt import (
    ModelListAnswer,
    ModelSqlAnswer,
    ProjectConfigAnswer,
    ReferencesAnswer,
    YamlFileAnswer,
)
from mcp_bridge.toolsets.schemas.paging import Cursor, Limit, NamePattern

INSTRUCTIONS = (
    "Read a dbt project's files: model SQL (raw or compiled), schema YAML, dbt_project.yml, the models "
    "with their tags/schema/materialization, and which files ref() or source() a name. Read-only; paths "
    "stay inside the project root."
)


ModelName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z0-9_.\-]+$",
        description="Model name (no .sql) or unique_id.",
    ),
]
Filter = Annotated[str | None, Field(max_length=256)]


def _file_provenance(path: Path | None = None) -> dict[str, Any]:
    """Provenance of an answer read from the project's files now (source "files")."""
    stamp: dict[str, Any] = {"source": "files", "read_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if path is not None:
        stamp["last_modified"] = pf.mtime_iso(path)
    return stamp


def _file_answer(path: Path, content: Any, scrub: Callable[[str], str]) -> ToolResult:
    """One parsed file of the project (a schema YAML, dbt_project.yml), its secrets replaced by *** on the parse
    the answer serves (`redactions` says where: key paths, never values)."""
    try:
        clean, found = redact_document(content, scrub)
    except TooLarge as exc:
        raise ToolFailure("limit_exceeded", f"{path.name}: {exc}") from None
    return as_result(
        {
            "file_path": str(path),
            "content": clean,
            "redactions": found.answer(),
            "last_modified": pf.mtime_iso(path),
            "provenance": _file_provenance(path),
        }
    )


def _listing(key: str, shown: paging.Page[Any]) -> dict[str, Any]:
    """The spec's list under `key`: this page, with the paging fields and the total."""
    return {key: shown.items, **shown.fields()}


def _model_rows(index: dict[str, Any]) -> dict[str, Any]:
    rows = []
    for uid, rec in index["nodes"].items():
        if rec.get("resource_type") != "model":
            continue
        rows.append(
            {
                "model_name": rec.get("name"),
                "node_id": uid,
                "file_path": rec.get("path"),
                "package": rec.get("package"),
                "schema": rec.get("schema"),
                "materialization": rec.get("materialization"),
                "tags": rec.get("tags") or [],
                "description": rec.get("description") or "",
            }
        )
    rows.sort(key=lambda r: (r["package"] != index.get("project_name"), r["model_name"] or "", r["node_id"]))
    # positions by filter value, so a filtered listing of a 20k-model project does not scan every model
    by: dict[str, dict[str, list[int]]] = {"tag": {}, "schema": {}, "materialization": {}}
    for position, row in enumerate(rows):
        for tag in row["tags"]:
            by["tag"].setdefault(tag.lower(), []).append(position)
        by["schema"].setdefault((row["schema"] or "").lower(), []).append(position)
        by["materialization"].setdefault((row["materialization"] or "").lower(), []).append(position)
    return {"rows": rows, "by": by}


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset("dbt-project", INSTRUCTIONS, DbtProjectTools(ctx))


class DbtProjectTools:
    """The dbt-project tools: each public method is one tool, its signature and docstring the published ones."""

    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.inputs = DbtInputs(ctx)
        self.cache = pf.FileCache()
        self.max_rows = ctx.settings.limits.max_rows

    def _root(self) -> Path:
        if self.inputs.project_dir is None:
            raise ToolFailure("not_implemented", "no dbt project is configured (dbt.project_dir in ade.yaml)")
        return self.inputs.project_dir

    def _locate(self, model_name: str) -> tuple[Path, dict[str, Any] | None, str | None]:
        """(model file, its index record or None, unique_id or None)."""
        project_root = self._root()
        snapshot, index = self.inputs.optional_index()
        if index is not None:
            try:
                uid = self.inputs.lookup(snapshot, index).resolve(model_name, ("model",))
            except UnresolvedNode:
                uid = None
            rec = index["nodes"].get(uid) if uid else None
            if rec and rec.get("path"):
                found = pf.package_file(
                    project_root, index.get("project_name"), rec.get("package"), rec["path"]
                )
                if found is not None:
                    return found, rec, uid
        found = pf.find_model_file(project_root, model_name.rsplit(".", 1)[-1])
        if found is None:
            raise ToolFailure(
                "model_not_found", f"no model {model_name!r} in the project", model_name=model_name
            )
        return found, None, None

    def _compiled_sql(
        self, model_name: str, path: Path, rec: dict[str, Any] | None, uid: str | None
    ) -> tuple[str, Any, str]:
        project_root = self._root()
        real_root = Path(pf.confine(project_root, [project_root]))
        package = (rec or {}).get("package") or _project_name(project_root) or ""
        rel = (rec or {}).get("path") or pf.relative_to_root(path, real_root)
        target_path = self.inputs.target_path
        if target_path is not None and package:
            found = pf.compiled_file(target_path, package, rel)
            if found is not None:
                real = pf.confine(found, [target_path, self.ctx.settings.home])
                return pf.read_text(real, rel), real, "target_compiled_file"
        manifest = self.inputs.optional("manifest", None) if uid is not None else None
        if manifest is not None:
            index_sql, extra = self.inputs.sql(manifest)
            entry = index_sql.get(uid)
            if entry and entry["compiled"]:
                # The compiled file dbt recorded (project-relative), even if target/ was cleaned since.
                return entry["compiled"], entry.get("compiled_path"), "manifest"
            if uid in extra:
                return extra[uid], None, "last_build_manifest"
        raise ToolFailure("compiled_not_found", f"no compiled SQL for {model_name!r}", model_name=model_name)

    @tool(READ_ONLY, answer=ModelSqlAnswer)
    def fs_read_model_sql(
        self,
        model_name: ModelName,
        compiled: Annotated[
            bool,
            Field(
                description="true: compiled; false: as authored.",
            ),
        ] = False,
    ) -> ToolResult:
        """The SQL of a dbt model: raw as authored (with Jinja) or compiled (refs resolved; needs a dbt compile,
        run or build)."""
        path, rec, uid = self._locate(model_name)
        real = pf.confine(path, [self._root()])
        if compiled:
            sql, where, origin = self._compiled_sql(model_name, real, rec, uid)
        else:
            sql, where, origin = pf.read_text(real, model_name), real, "model_file"
        sql, found = redact_text(sql, self.ctx.scrubber())
        return as_result(
            {
                "model_name": (rec or {}).get("name") or path.stem,
                "node_id": uid,
                "compiled": compiled,
                "compiled_source": origin if compiled else None,
                "file_path": str(where) if where is not None else None,
                "sql": sql,
                "line_count": len(sql.splitlines()),
                "redactions": found.answer(),
                "last_modified": pf.mtime_iso(where) if isinstance(where, Path) else None,
                "provenance": _file_provenance(),
            }
        )

    @tool(READ_ONLY, answer=YamlFileAnswer)
    def fs_read_schema_yaml(
        self,
        schema_path: Annotated[
            str,
            Field(
                min_length=1,
                max_length=1024,
                description="Relative to the project root: models/staging/schema.yml.",
            ),
        ],
    ) -> ToolResult:
        """A dbt schema YAML file (models, columns, tests, sources as written), parsed, credential values
        redacted. Credential files (profiles.yml, .env, keys) are refused."""
        project_root = self._root()
        real = pf.confine(schema_path, [project_root], project_root)
        return _file_answer(real, pf.read_yaml(real, schema_path), self.ctx.scrubber())

    @tool(READ_ONLY, answer=ModelListAnswer)
    def fs_list_models(
        self,
        tag: Filter = None,
        schema: Filter = None,
        materialization: Annotated[Filter, Field(description="table, view, incremental, ...")] = None,
        name_pattern: NamePattern = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> ToolResult:
        """The dbt project's models with path, schema, materialization, tags and description, filtered by tag,
        schema, materialization or name. Paged list `models`."""
        named = paging.name_matcher(name_pattern)
        query = ("fs_list_models", tag, schema, materialization, name_pattern)
        snapshot, index = self.inputs.optional_index()
        if index is None:
            project_root = self._root()
            real_root = pf.confine(project_root, [project_root])
            rows = [
                {
                    "model_name": p.stem,
                    "file_path": pf.relative_to_root(pf.confine(p, [real_root]), real_root),
                }
                for p in pf.iter_model_files(project_root)
                if named(p.stem)
            ]
            if tag or schema or materialization:
                raise ToolFailure(
                    "asset_not_materialized",
                    "filters need the manifest (tags, schema and materialization live there)",
                    "Materialize it first: `ade materialize --select dbt_lineage_index`.",
                )
            version = paging.live_version(rows, key=lambda r: r["file_path"])
            shown = paging.page(rows, limit, cursor, version=version, query=query, cap=self.max_rows)
            return as_result({**_listing("models", shown), "provenance": _file_provenance()})
        listing = derive(snapshot, "fs_model_rows", lambda _s: _model_rows(index))
        rows = listing["rows"]
        filters = {"tag": tag, "schema": schema, "materialization": materialization}
        chosen = [set(listing["by"][k].get(v.lower(), ())) for k, v in filters.items() if v]
        if chosen:
            rows = [rows[i] for i in sorted(set.intersection(*chosen))]
        if name_pattern:
            rows = [r for r in rows if named(r.get("model_name"))]
        shown = paging.page(rows, limit, cursor, version=snapshot.version, query=query, cap=self.max_rows)
        return as_result(self.ctx.cached_answer(snapshot, _listing("models", shown)))

    @tool(READ_ONLY, answer=ProjectConfigAnswer)
    def fs_read_project_config(self) -> ToolResult:
        """dbt_project.yml, parsed: paths, vars, hooks and per-folder configs. Jinja such as env_var() is
        returned as written, never rendered."""
        project_root = self._root()
        config = pf.project_config(project_root)
        return _file_answer(project_root / "dbt_project.yml", config, self.ctx.scrubber())

    @tool(READ_ONLY, answer=ReferencesAnswer)
    def fs_find_models_referencing(
        self,
        source_or_model: Annotated[
            str,
            Field(
                min_length=1,
                max_length=300,
                description="A model (stg_orders) or source_name.table_name (raw.orders).",
            ),
        ],
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> ToolResult:
        """dbt model files whose raw SQL calls ref() or source() on a model or source, one entry per line. Reads
        the files (works when the manifest is stale; misses macro-made refs). Paged list `references`."""
        found = pf.find_references(self._root(), source_or_model, self.cache)
        version = paging.live_version(found, key=lambda r: (r["file_path"], r["line_number"]))
        query = ("fs_find_models_referencing", source_or_model)
        shown = paging.page(found, limit, cursor, version=version, query=query, cap=self.max_rows)
        return as_result({**_listing("references", shown), "provenance": _file_provenance()})


def _project_name(project_root: Path) -> str | None:
    try:
        return pf.project_config(project_root).get("name")
    except pf.ProjectFileError:
        return None
