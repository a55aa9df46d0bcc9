"""Where the dbt tools' inputs come from: the store by default, or an artifact path confined to the roots.

Shared by the dbt-artifacts and dbt-project toolsets (and the warehouse's drift check, which reads the
manifest); `derive` and `as_result` serve every toolset that answers from large snapshots.

Every structure a tool needs beyond the raw JSON (name lookup, catalog columns, SQL per node, summaries)
is memoized on the snapshot it came from (`snapshot.derived`), so it is built once per version.
A path given to a tool becomes an in-memory snapshot keyed by (real path, mtime, size): re-reading the
same unchanged file costs one stat.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import orjson
from fastmcp.tools import ToolResult
from mcp.types import TextContent

from ade_platform.lib.dbt import sql_source
from ade_platform.lib.dbt.artifacts import (
    ARTIFACT_FILES,
    ArtifactError,
    freeze_heap,
    gc_paused,
    schema_version,
)
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.dbt.lookup import NodeLookup, UnresolvedNode
from ade_platform.lib.dbt.project_files import ProjectFileError, confine
from ade_platform.lib.dbt.publish import (
    ARTIFACT_ASSETS,
    LINEAGE_INDEX_ASSET,
    SELECT_STAR_ASSET,
    file_signature,
    last_build_sql_index,
)
from ade_platform.lib.dbt.schema import catalog_index
from ade_platform.store import CorruptSnapshot, Provenance, Snapshot, SnapshotNotFound
from ade_platform.store.observations import Observation, table_key
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure

# What a missing artifact is called, per the spec (catalog_not_found, sources_not_found).
_MISSING = {
    "manifest": "artifact_not_found",
    "run-results": "artifact_not_found",
    "catalog": "catalog_not_found",
    "sources": "sources_not_found",
}
_FILE_SNAPSHOTS = 6
T = TypeVar("T")


def derive(snapshot: Snapshot, key: str, build: Callable[[Snapshot], T]) -> T:
    """snapshot.derived with the garbage collector paused while a (large, acyclic) structure is built, and
    the result frozen out of later collections (so request latency does not grow with the project)."""

    def built(s: Snapshot) -> T:
        value = build(s)
        freeze_heap()
        return value

    with gc_paused():
        return snapshot.derived(key, built)


def as_result(body: dict[str, Any]) -> ToolResult:
    """The answer as MCP content: orjson text plus the same dict as structured content.

    Returning a ToolResult skips FastMCP's pydantic passes over the answer (a much faster round trip for a
    500-node lineage), so its annotation says nothing of the shape: the tools declare it with
    `output_schema=schema_of(<TypedDict>)` (mcp_bridge/toolsets/schemas/).

    model_construct skips ToolResult's own deep re-serialization of the dict (answers here are built from
    JSON and hold only JSON types), which is most of the cost of a large answer.
    """
    text = orjson.dumps(body, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    return ToolResult.model_construct(
        content=[TextContent(type="text", text=text)], structured_content=body, meta=None, is_error=False
    )


class DbtInputs:
    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        settings = ctx.settings
        self.project_dir: Path | None = settings.dbt.project_dir if settings.dbt else None
        self.target_path: Path | None = settings.dbt_target_path
        extra_roots = list(settings.dbt.artifact_roots) if settings.dbt else []
        self.roots = [
            p for p in (self.project_dir, self.target_path, settings.home, *extra_roots) if p is not None
        ]
        # What a refused path is told: the settings that admit folders, and the folders they name.
        self.allowed_roots = [
            {"setting": key, "path": str(p)}
            for key, p in (
                ("dbt.project_dir", self.project_dir),
                ("dbt.target_path", self.target_path),
                ("home", settings.home),
                *(("dbt.artifact_roots", r) for r in extra_roots),
            )
            if p is not None
        ]
        self.last_build = settings.home / "dbt" / "last_build" / "manifest.json"
        self._files: OrderedDict[tuple[str, int, int], Snapshot] = OrderedDict()
        self._lock = threading.Lock()
        self._last_build_sql: tuple[Any, dict[str, Any]] | None = None

    # ---- snapshots -------------------------------------------------------------------------------
    def artifact(self, kind: str, path: str | None) -> Snapshot:
        """The latest stored artifact, or the file at `path` (confined to the configured roots)."""
        if path is None:
            try:
                return self.ctx.reader.latest(ARTIFACT_ASSETS[kind])
            except SnapshotNotFound:
                if kind in ("catalog", "sources"):
                    raise ToolFailure(
                        _MISSING[kind], f"no {ARTIFACT_FILES[kind]} has been materialized into the store"
                    ) from None
                raise
        return self._file_snapshot(kind, path)

    def _refused(self, kind: str, path: str, exc: ProjectFileError) -> ToolFailure:
        """A confined path, refused helpfully: the allowed roots, and whether omitting the path would do. (Kept
        on purpose: here, and only here, the refusal names what would admit the path.)"""
        name = Path(path).name
        hint = "Artifact paths must be inside dbt.project_dir, dbt.target_path or the ADE home; add a folder "
        hint += "to dbt.artifact_roots in ade.yaml to admit it."
        same = (
            self.target_path is not None
            and name == ARTIFACT_FILES[kind]
            and (self.target_path / name).is_file()
        )
        if same:
            hint = f"The configured target has a {name}: omit the path to use it. " + hint
        return ToolFailure(
            exc.code, exc.detail, hint, allowed_roots=self.allowed_roots, omit_path_to_use_target=same
        )

    def optional(self, kind: str, path: str | None) -> Snapshot | None:
        """Like artifact(), but None when the store has none or only a corrupt one (a given path must still
        exist)."""
        try:
            return self.artifact(kind, path)
        except (ToolFailure, SnapshotNotFound, CorruptSnapshot):
            if path is not None:
                raise
            return None

    def _file_snapshot(self, kind: str, path: str) -> Snapshot:
        try:
            real = confine(path, self.roots, self.project_dir)
        except ProjectFileError as exc:
            raise self._refused(kind, path, exc) from None
        try:
            st = real.stat()
        except FileNotFoundError:
            raise ToolFailure(_MISSING[kind], f"{ARTIFACT_FILES[kind]} not found at {path!r}") from None
        if not real.is_file():
            raise ToolFailure(_MISSING[kind], f"{path!r} is not a file")
        key = (str(real), st.st_mtime_ns, st.st_size)
        with self._lock:
            cached = self._files.get(key)
            if cached is not None:
                self._files.move_to_end(key)
                return cached
        materialized = datetime.fromtimestamp(st.st_mtime, UTC).isoformat(timespec="microseconds")
        provenance = Provenance(
            asset=ARTIFACT_ASSETS[kind],
            version="file-" + hashlib.sha256(repr(key).encode()).hexdigest()[:16],
            materialized_at=materialized,
            source={"origin": "file", "path": path},
        )
        snapshot = Snapshot(None, provenance, {"data.json": real.read_bytes()})  # type: ignore[arg-type]
        try:
            with gc_paused():
                data = snapshot.data
        except CorruptSnapshot:
            raise ArtifactError("artifact_unreadable", f"{path!r} is not valid JSON") from None
        if not isinstance(data, dict):
            raise ArtifactError("artifact_unreadable", f"{path!r} is not a JSON object")
        schema_version(data, kind)
        with self._lock:
            self._files[key] = snapshot
            while len(self._files) > _FILE_SNAPSHOTS:
                self._files.popitem(last=False)
        return snapshot

    def index(self, manifest_path: str | None = None) -> tuple[Snapshot, dict[str, Any]]:
        """The lineage index: the stored one, or one derived (once) from the given manifest."""
        if manifest_path is None:
            snapshot = self.ctx.reader.latest(LINEAGE_INDEX_ASSET)
            return snapshot, derive(snapshot, "index_data", lambda s: s.data)
        snapshot = self._file_snapshot("manifest", manifest_path)
        return snapshot, derive(snapshot, "lineage_index", lambda s: build_lineage_index(s.data))

    def optional_index(
        self, manifest_path: str | None = None
    ) -> tuple[Snapshot | None, dict[str, Any] | None]:
        try:
            return self.index(manifest_path)
        except SnapshotNotFound:
            return None, None
        except CorruptSnapshot:
            if manifest_path is not None:
                raise
            # an optional input that does not read back intact (and has no earlier good version) must not break
            # a tool whose own artifact is intact: answer without it
            return None, None

    def lookup(self, snapshot: Snapshot, index: dict[str, Any]) -> NodeLookup:
        return derive(snapshot, "node_lookup", lambda _s: NodeLookup.build(index))

    def resolve(
        self,
        snapshot: Snapshot,
        index: dict[str, Any],
        query: str,
        code: str = "node_not_found",
        resource_types: tuple[str, ...] | None = None,
    ) -> str:
        try:
            return self.lookup(snapshot, index).resolve(query, resource_types)
        except UnresolvedNode as exc:
            if exc.ambiguous:
                raise ToolFailure(
                    "ambiguous_node",
                    f"{query!r} names {len(exc.candidates)} nodes",
                    f"Pass one of: {', '.join(exc.candidates)}",
                ) from None
            hint = f"Did you mean: {', '.join(exc.candidates)}?" if exc.candidates else None
            raise ToolFailure(code, f"no node {query!r} in the manifest", hint) from None

    def catalog(self, snapshot: Snapshot) -> dict[str, Any]:
        return derive(snapshot, "catalog_index", lambda s: catalog_index(orjson.loads(s.file("data.json"))))

    # ---- SQL -------------------------------------------------------------------------------------
    def sql(self, manifest: Snapshot) -> tuple[dict[str, Any], dict[str, str]]:
        """(sql index of the manifest, compiled SQL borrowed from the last build for unchanged nodes)."""
        primary = derive(
            manifest, "sql_index", lambda s: sql_source.sql_index(orjson.loads(s.file("data.json")))
        )
        if all(entry["compiled"] for entry in primary.values()):
            return primary, {}
        other = self._last_build_index()
        if other is None:
            return primary, {}
        key = f"sql_supplement:{other[0]}"
        return primary, derive(manifest, key, lambda _s: sql_source.borrowed_sql(primary, other[1]))

    def _last_build_index(self) -> tuple[Any, dict[str, Any]] | None:
        try:
            st = self.last_build.stat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        signature = (st.st_mtime_ns, st.st_size)
        cached = self._last_build_sql
        if cached is not None and cached[0] == signature:
            return cached
        index = last_build_sql_index(self.last_build)
        if index is None:
            return None
        self._last_build_sql = (signature, index)
        return self._last_build_sql

    def select_star_report(self, manifest: Snapshot) -> tuple[Snapshot, Snapshot] | None:
        """(the stored `SELECT *` scan, the lineage index it used) when the scan was computed from exactly the
        current inputs: this manifest, the latest index, and the same last build where it borrowed from one.
        None otherwise. Nothing is parsed here: versions and one stat decide."""
        try:
            report = self.ctx.reader.latest(SELECT_STAR_ASSET)
            index = self.ctx.reader.latest(LINEAGE_INDEX_ASSET)
        except (SnapshotNotFound, CorruptSnapshot):
            return None
        source = report.provenance.source
        current = (
            source.get("manifest_version") == manifest.version
            and source.get("lineage_index_version") == index.version
            and (
                not source.get("needs_last_build")
                or source.get("last_build_signature") == file_signature(self.last_build)
            )
        )
        return (report, index) if current else None

    def invocation(self, run_results: Snapshot) -> dict[str, Any] | None:
        """What dbt's own log says of the run behind a stored run_results.json: that run (`this_run: true`), or
        a newer invocation whose results the store does not have (failed before writing them, or running).
        None for an artifact read from a path, or when the log says nothing newer."""
        if run_results.provenance.source.get("origin") == "file":
            return None
        related = self.ctx.staleness().related_invocation(run_results.provenance)
        if related is None:
            return None
        found, this_run = related
        return {**found.to_dict(), "this_run": this_run}

    def observed_relation(
        self, index: dict[str, Any], catalog: dict[str, Any], uid: str, catalog_snap: Snapshot
    ) -> Observation | None:
        """A live read of the node's relation (any agent's) newer than the catalog, when there is one."""
        warehouse = self.ctx.settings.dbt.warehouse if self.ctx.settings.dbt else None
        entry = catalog["entries"].get(uid) or {}
        rec = index["nodes"].get(uid) or {}
        schema_name = entry.get("schema") or rec.get("schema")
        name = entry.get("name") or rec.get("alias") or rec.get("name")
        if not (warehouse and schema_name and name) or catalog_snap.provenance.source.get("origin") == "file":
            return None
        since = catalog.get("generated_at") or catalog_snap.provenance.materialized_at
        return self.ctx.newer_observation("table_schema", table_key(warehouse, schema_name, name), since)

    # ---- answers ---------------------------------------------------------------------------------
    def run_answer(
        self, run_results: Snapshot, body: dict[str, Any], *others: Snapshot | None
    ) -> dict[str, Any]:
        """`answer` for a question about a dbt run: with what dbt's log says of it (`invocation`), if anything."""
        invocation = self.invocation(run_results)
        if invocation is not None:
            body["invocation"] = invocation
        return self.answer(run_results, body, *others)

    def answer(
        self,
        primary: Snapshot,
        body: dict[str, Any],
        *others: Snapshot | None,
        observations: list[Observation] | None = None,
    ) -> dict[str, Any]:
        """Stamp provenance: the store snapshot (source "cache") or the file (source "file")."""
        if primary.provenance.source.get("origin") == "file":
            stamp = primary.provenance.stamp()
            stamp.update(source="file", path=primary.provenance.source.get("path"), stale=False)
            out = {**body, "provenance": stamp}
        else:
            out = self.ctx.cached_answer(primary, body, observations=observations)
        inputs = [s for s in others if s is not None and s is not primary]
        if inputs:
            out["provenance"]["inputs"] = [
                {"asset": s.asset, "version": s.version, "materialized_at": s.provenance.materialized_at}
                for s in inputs
            ]
            # an input served from its previous good version (its latest is corrupt) makes the answer stale too
            fallbacks = [f"{s.asset}: {s.fallback_reason}" for s in inputs if s.fallback_reason]
            if fallbacks:
                prov = out["provenance"]
                prov["stale"] = True
                prov["stale_reason"] = "; ".join(filter(None, [prov.get("stale_reason"), *fallbacks]))
        return out
