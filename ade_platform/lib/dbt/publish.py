"""Publishing dbt artifacts and the derived lineage index to the asset store.

Used by the Dagster assets and by `ade mcp --target-path DIR` (which serves any dbt target directory
without Dagster), so both paths produce identical snapshots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ade_platform.lib.dbt.artifacts import ARTIFACT_FILES, gc_paused, parse_artifact
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


def artifact_source(path: Path, artifact: dict[str, Any]) -> dict[str, Any]:
    meta = artifact.get("metadata") or {}
    return {
        "path": str(path),
        "dbt_version": meta.get("dbt_version"),
        "dbt_schema_version": meta.get("dbt_schema_version"),
        "generated_at": meta.get("generated_at"),
        "invocation_id": meta.get("invocation_id"),
    }


def _publish_parsed(
    writer: StoreWriter,
    kind: str,
    path: Path,
    *,
    run_id: str | None = None,
    code_version: str | None = None,
) -> tuple[Provenance, dict[str, Any]]:
    raw = path.read_bytes()
    artifact = parse_artifact(raw, kind)
    provenance = writer.publish(
        ARTIFACT_ASSETS[kind],
        files={"data.json": raw},
        run_id=run_id,
        code_version=code_version,
        source=artifact_source(path, artifact),
    )
    return provenance, artifact


def publish_artifact(
    writer: StoreWriter,
    kind: str,
    path: Path,
    *,
    run_id: str | None = None,
    code_version: str | None = None,
) -> Provenance:
    """Validate one artifact file and publish its bytes unchanged (tools re-read it exactly as dbt wrote it)."""
    return _publish_parsed(writer, kind, path, run_id=run_id, code_version=code_version)[0]


def _publish_index(
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
        **{k: v for k, v in manifest_prov.source.items() if k in ("dbt_version", "path")},
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
    return _publish_index(
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
            parsed[kind] = _publish_parsed(writer, kind, path, run_id=run_id)
            published[kind] = parsed[kind][0].version
    if "manifest" in parsed:
        manifest_prov, manifest = parsed["manifest"]
        catalog_prov, catalog = parsed.get("catalog") or (None, None)
        provenance, _ = _publish_index(writer, manifest, manifest_prov, catalog, catalog_prov, run_id)
        published["lineage_index"] = provenance.version
    return published
