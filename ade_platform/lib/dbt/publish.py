"""Publishing dbt artifacts and the derived lineage index to the asset store.

Used by the Dagster assets and by `ade mcp --target-path DIR` (which serves any dbt target directory
without Dagster), so both paths produce identical snapshots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ade_platform.lib.dbt.artifacts import ARTIFACT_FILES, parse_artifact
from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.store import Provenance, SnapshotNotFound, StoreReader, StoreWriter

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


def publish_artifact(
    writer: StoreWriter,
    kind: str,
    path: Path,
    *,
    run_id: str | None = None,
    code_version: str | None = None,
) -> Provenance:
    """Validate one artifact file and publish its bytes unchanged (tools re-read it exactly as dbt wrote it)."""
    raw = path.read_bytes()
    artifact = parse_artifact(raw, kind)
    return writer.publish(
        ARTIFACT_ASSETS[kind],
        files={"data.json": raw},
        run_id=run_id,
        code_version=code_version,
        source=artifact_source(path, artifact),
    )


def publish_lineage_index(
    writer: StoreWriter, reader: StoreReader, *, run_id: str | None = None
) -> tuple[Provenance, dict[str, Any]]:
    """Derive the lineage index from the latest manifest (and catalog, when there is one)."""
    manifest_snap = reader.latest(ARTIFACT_ASSETS["manifest"])
    try:
        catalog_snap = reader.latest(ARTIFACT_ASSETS["catalog"])
        catalog = catalog_snap.data
    except SnapshotNotFound:
        catalog_snap, catalog = None, None
    index = build_lineage_index(manifest_snap.data, catalog)
    source = {
        "manifest_version": manifest_snap.version,
        "catalog_version": catalog_snap.version if catalog_snap else None,
        **{k: v for k, v in manifest_snap.provenance.source.items() if k in ("dbt_version", "path")},
    }
    provenance = writer.publish(LINEAGE_INDEX_ASSET, index, run_id=run_id, source=source)
    stats = {
        "nodes": len(index["nodes"]),
        "edges": sum(len(p) for p in index["parents"].values()),
        "bytes": len(orjson.dumps(index)),
    }
    return provenance, stats


def publish_target_dir(writer: StoreWriter, target_dir: Path, *, run_id: str | None = None) -> dict[str, str]:
    """Publish every artifact present in a dbt target directory, then the lineage index."""
    published: dict[str, str] = {}
    for kind, filename in ARTIFACT_FILES.items():
        path = target_dir / filename
        if path.exists():
            published[kind] = publish_artifact(writer, kind, path, run_id=run_id).version
    if "manifest" in published:
        provenance, _ = publish_lineage_index(writer, StoreReader(writer.root), run_id=run_id)
        published["lineage_index"] = provenance.version
    return published
