"""Publishing dbt artifacts and the derived lineage index to the asset store.

Used by the Dagster assets and by `ade mcp --target-path DIR` (which serves any dbt target directory
without Dagster), so both paths produce identical snapshots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ade_platform.lib.dbt import select_star, sql_source
from ade_platform.lib.dbt.artifacts import (
    ARTIFACT_FILES,
    ArtifactError,
    gc_paused,
    parse_artifact,
    schema_version,
)
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import Provenance, SnapshotNotFound, StoreReader, StoreWriter
from ade_platform.store.writer import dumps

# artifact kind -> store asset name
ARTIFACT_ASSETS = {
    "manifest": "dbt_manifest",
    "catalog": "dbt_catalog",
    "run-results": "dbt_run_results",
    "sources": "dbt_sources",
}
LINEAGE_INDEX_ASSET = "dbt_lineage_index"
SELECT_STAR_ASSET = "dbt_select_star"
_INDEX_SOURCE_KEYS = ("dbt_version", "path", "dbt_cloud", "generated_at", "invocation_id", "published_by")


def artifact_source(path: Path, artifact: dict[str, Any]) -> dict[str, Any]:
    meta = artifact.get("metadata") or {}
    return {
        "path": str(path),
        "dbt_version": meta.get("dbt_version"),
        "dbt_schema_version": meta.get("dbt_schema_version"),
        "generated_at": meta.get("generated_at"),
        "invocation_id": meta.get("invocation_id"),
    }


def publish_parsed(
    writer: StoreWriter,
    kind: str,
    path: Path,
    *,
    run_id: str | None = None,
    code_version: str | None = None,
    origin: str | None = None,
) -> tuple[Provenance, dict[str, Any]]:
    signature = file_signature(path)
    raw = path.read_bytes()
    artifact = parse_artifact(raw, kind)
    source = artifact_source(path, artifact)
    # (mtime_ns, size) of the file published: a detector compares it with the file on disk later.
    source["file_signature"] = signature
    if origin:
        source["published_by"] = origin
    provenance = writer.publish(
        ARTIFACT_ASSETS[kind],
        files={"data.json": raw},
        run_id=run_id,
        code_version=code_version,
        source=source,
    )
    return provenance, artifact


def publish_artifact(writer: StoreWriter, kind: str, path: Path, **options: str | None) -> Provenance:
    """Validate one artifact file and publish its bytes unchanged (tools re-read it exactly as dbt wrote it):
    `publish_parsed` with the same options, for a caller that needs only the provenance."""
    return publish_parsed(writer, kind, path, **options)[0]


def publish_index(
    writer: StoreWriter,
    manifest: dict[str, Any],
    manifest_prov: Provenance,
    catalog: dict[str, Any] | None,
    catalog_prov: Provenance | None,
    run_id: str | None,
) -> tuple[Provenance, dict[str, Any]]:
    with gc_paused():
        index = build_lineage_index(manifest, catalog)
        blob = dumps(index)
    source = {
        "manifest_version": manifest_prov.version,
        "catalog_version": catalog_prov.version if catalog_prov else None,
        # what the index describes (its manifest's invocation and time) and who published it, for staleness checks
        **{k: v for k, v in manifest_prov.source.items() if k in _INDEX_SOURCE_KEYS},
    }
    provenance = writer.publish(LINEAGE_INDEX_ASSET, files={"data.json": blob}, run_id=run_id, source=source)
    stats = {
        "nodes": len(index["nodes"]),
        "edges": sum(len(p) for p in index["parents"].values()),
        "bytes": len(blob),
    }
    return provenance, stats


def publish_lineage_index(
    writer: StoreWriter, reader: StoreReader, *, run_id: str | None = None
) -> tuple[Provenance, dict[str, Any]]:
    """Derive the lineage index from the latest manifest (and catalog, when there is one)."""
    manifest_snap = reader.latest(ARTIFACT_ASSETS["manifest"])
    try:
        catalog_snap = reader.latest(ARTIFACT_ASSETS["catalog"])
    except SnapshotNotFound:
        catalog_snap = None
    with gc_paused():
        manifest = orjson.loads(manifest_snap.file("data.json"))
        catalog = orjson.loads(catalog_snap.file("data.json")) if catalog_snap else None
    return publish_index(
        writer,
        manifest,
        manifest_snap.provenance,
        catalog,
        catalog_snap.provenance if catalog_snap else None,
        run_id,
    )


def publish_target_dir(writer: StoreWriter, target_dir: Path, *, run_id: str | None = None) -> dict[str, str]:
    """Publish every artifact present in a dbt target directory, then the lineage index.

    Each file is read and parsed once: the parsed manifest and catalog feed the index directly.
    """
    published: dict[str, str] = {}
    parsed: dict[str, tuple[Provenance, dict[str, Any]]] = {}
    for kind, filename in ARTIFACT_FILES.items():
        path = target_dir / filename
        if path.exists():
            parsed[kind] = publish_parsed(writer, kind, path, run_id=run_id)
            published[kind] = parsed[kind][0].version
    if "manifest" in parsed:
        manifest_prov, manifest = parsed["manifest"]
        catalog_prov, catalog = parsed.get("catalog") or (None, None)
        provenance, _ = publish_index(writer, manifest, manifest_prov, catalog, catalog_prov, run_id)
        published["lineage_index"] = provenance.version
    return published


# A small marker the dbt build op writes when it starts and again when it has published: lets a cached tool
# say "a dbt build is running (or died) since this snapshot" without reading Dagster's run history.
INVOCATION_ASSET = "dbt_invocation"


def publish_invocation(
    writer: StoreWriter,
    reader: StoreReader,
    target_dir: Path,
    *,
    run_id: str | None = None,
    origin: str = "dagster",
) -> dict[str, str]:
    """Publish what one dbt invocation wrote, whatever its outcome: its run_results.json, the manifest it ran
    with, and the lineage index of that manifest (with the latest catalog, when there is one).

    A failed or partial `dbt build` still writes both files; they describe the run that just happened, which
    is what an agent called in after the failure needs. Unreadable files are skipped, not fatal: the caller
    is usually reporting a dbt failure already.
    """
    published: dict[str, str] = {}
    manifest: tuple[Provenance, dict[str, Any]] | None = None
    for kind in ("run-results", "manifest"):
        path = target_dir / ARTIFACT_FILES[kind]
        if not path.is_file():
            continue
        try:
            prov, data = publish_parsed(writer, kind, path, run_id=run_id, origin=origin)
        except (ArtifactError, OSError, orjson.JSONDecodeError):
            continue
        published[kind] = prov.version
        if kind == "manifest":
            manifest = (prov, data)
    if manifest is not None:
        try:
            catalog_snap = reader.latest(ARTIFACT_ASSETS["catalog"])
            with gc_paused():
                catalog = orjson.loads(catalog_snap.file("data.json"))
        except SnapshotNotFound:
            catalog_snap, catalog = None, None
        provenance, _ = publish_index(
            writer,
            manifest[1],
            manifest[0],
            catalog,
            catalog_snap.provenance if catalog_snap else None,
            run_id,
        )
        published["lineage_index"] = provenance.version
    return published


def mark_invocation(writer: StoreWriter, *, state: str, run_id: str | None, started_at: str) -> Provenance:
    """Record that a dbt build started (`running`) or has published its artifacts (`published`)."""
    return writer.publish(
        INVOCATION_ASSET, {"state": state, "run_id": run_id, "started_at": started_at}, run_id=run_id
    )


def file_signature(path: Path) -> list[int] | None:
    """(mtime_ns, size) of a file, or None when there is none: what says a file was rewritten."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    return [st.st_mtime_ns, st.st_size]


def last_build_sql_index(path: Path) -> dict[str, dict[str, Any]] | None:
    """The SQL index of the last build's manifest, or None when there is no readable one."""
    try:
        with gc_paused():
            data = orjson.loads(path.read_bytes())
        schema_version(data, "manifest")
    except (orjson.JSONDecodeError, ArtifactError, OSError):
        return None
    return sql_source.sql_index(data)


def publish_select_star(
    writer: StoreWriter, reader: StoreReader, last_build_manifest: Path | None, *, run_id: str | None = None
) -> tuple[Provenance, dict[str, Any]]:
    """Scan every model of the latest manifest for `SELECT *` (a sqlglot parse per model: seconds on a large
    project) so that `dbt_find_select_star` answers from the store. The source records what the scan was
    computed from; the tool uses the report only while all of it is still current."""
    manifest_snap = reader.latest(ARTIFACT_ASSETS["manifest"])
    index_snap = reader.latest(LINEAGE_INDEX_ASSET)
    with gc_paused():
        primary = sql_source.sql_index(orjson.loads(manifest_snap.file("data.json")))
        index = orjson.loads(index_snap.file("data.json"))
    # Whether the scan depends on the last build's manifest, and which one (stat first: a file replaced after
    # the stat only makes the report look stale, never current when it is not).
    needs_last_build = not all(entry["compiled"] for entry in primary.values())
    signature = file_signature(last_build_manifest) if needs_last_build and last_build_manifest else None
    other = last_build_sql_index(last_build_manifest) if signature else None
    extra = sql_source.borrowed_sql(primary, other)
    findings = select_star.scan_project(primary, extra, index)
    source = {
        "manifest_version": manifest_snap.version,
        "lineage_index_version": index_snap.version,
        "needs_last_build": needs_last_build,
        "last_build_signature": signature,
        "borrowed_compiled_nodes": len(extra),
    }
    provenance = writer.publish(
        SELECT_STAR_ASSET, files={"data.json": dumps({"models": findings})}, run_id=run_id, source=source
    )
    stats = {
        "models_with_star": len(findings),
        "final_select_star": sum(1 for f in findings if f["final_select_star"]),
        "propagating": sum(1 for f in findings if f["propagates_upstream_columns"]),
    }
    return provenance, stats
