"""Publishing immutable snapshots and moving the "latest" pointer (no Dagster import)."""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from typing import Any

import orjson

from ade_platform.store.heal import remove_leftovers
from ade_platform.store.layout import DATA_FILE, POINTER_FILE, PROVENANCE_FILE, VERSIONS_DIR
from ade_platform.store.location import StoreLocation, open_root
from ade_platform.store.model import Provenance, StoreError, utc_now_iso
from ade_platform.store.paths import StoreRoot

_ASSET_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
_POINTER_CAS_ATTEMPTS = 20


def _pointer_version(raw: bytes) -> str | None:
    try:
        version = orjson.loads(raw)["version"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return version if isinstance(version, str) else None


def check_asset_name(asset: str) -> str:
    if not _ASSET_NAME.match(asset):
        raise StoreError(f"invalid asset name {asset!r}: use letters, digits, '_', '.', '-'")
    return asset


def new_version() -> str:
    # Zero-padded nanoseconds sort lexically in publication order; the suffix breaks ties across writers.
    return f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"


def dumps(data: Any) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY, default=str)


class StoreWriter:
    """Writes versions of assets. Safe to use from several processes at once."""

    def __init__(self, root: str | os.PathLike[str] | StoreLocation | StoreRoot, retention: int = 20):
        if retention < 1:
            raise ValueError("retention must keep at least one version")
        self.root = root if isinstance(root, StoreRoot) else open_root(root)
        self.retention = retention

    def publish(
        self,
        asset: str,
        data: Any = None,
        *,
        files: dict[str, bytes] | None = None,
        run_id: str | None = None,
        code_version: str | None = None,
        source: dict[str, Any] | None = None,
    ) -> Provenance:
        """Write a new immutable version of `asset`, then atomically point "latest" at it."""
        check_asset_name(asset)
        payload: dict[str, bytes] = dict(files or {})
        if data is not None:
            payload[DATA_FILE] = dumps(data)
        if not payload:
            raise StoreError(f"nothing to publish for asset '{asset}'")
        for name in payload:
            if name == PROVENANCE_FILE or "/" in name or name.startswith("."):
                raise StoreError(f"invalid snapshot file name {name!r}")
        digests = {name: hashlib.sha256(blob).hexdigest() for name, blob in payload.items()}
        version = new_version()
        combined = hashlib.sha256("".join(f"{n}:{d}" for n, d in sorted(digests.items())).encode())
        provenance = Provenance(
            asset=asset,
            version=version,
            materialized_at=utc_now_iso(),
            run_id=run_id,
            code_version=code_version,
            data_version=combined.hexdigest()[:16],
            source=source or {},
            files=digests,
        )
        payload[PROVENANCE_FILE] = dumps(provenance.to_dict())
        self.root.write_dir_atomic(f"{asset}/{VERSIONS_DIR}/{version}", payload)
        self._move_pointer(asset, version)
        self.prune(asset, keep_version=version)
        return provenance

    def _move_pointer(self, asset: str, version: str) -> None:
        """Point LATEST at `version`, written last. With conditional writes (object stores) it is a
        compare-and-swap that never moves the pointer to an older version than the one it names."""
        rel = f"{asset}/{POINTER_FILE}"
        blob = dumps({"version": version})
        if not self.root.supports_conditional_pointer:
            self.root.write_bytes_atomic(rel, blob)
            return
        for _ in range(_POINTER_CAS_ATTEMPTS):
            try:
                raw, etag = self.root.read_with_etag(rel)  # type: ignore[attr-defined]
                current = _pointer_version(raw)
            except FileNotFoundError:
                current, etag = None, None
            if current is not None and current >= version:
                return  # a newer version is already published: ours stays in the history
            if self.root.put_if(rel, blob, etag):  # type: ignore[attr-defined]
                return
        raise StoreError(f"could not move the pointer of '{asset}': too many concurrent writers")

    def current_version(self, asset: str) -> str | None:
        try:
            return _pointer_version(self.root.read_bytes(f"{asset}/{POINTER_FILE}"))
        except FileNotFoundError:
            return None

    def prune(self, asset: str, keep_version: str | None = None) -> list[str]:
        """Drop versions beyond the retention bound (never the current one) and what killed writers left."""
        entries = self.root.version_entries(f"{asset}/{VERSIONS_DIR}")
        versions = [e for e, committed in entries.items() if committed]
        # Only unreferenced versions go: never the one the pointer names now (another writer may have moved it),
        # nor anything newer (a publication in flight whose pointer is not written yet).
        pointed = self.current_version(asset)
        older = [v for v in versions if pointed is None or v < pointed]
        excess = max(0, len(versions) - self.retention)
        doomed = [v for v in older[:excess] if v not in (keep_version, pointed)]
        for version in doomed:
            self.root.remove_tree(f"{asset}/{VERSIONS_DIR}/{version}")
        # An uncommitted entry (a ".tmp" folder, a version without provenance.json) whose writer is gone, or
        # that is older than any write could take, will never be finished: this write cleans it up.
        remove_leftovers(self.root, asset, entries=entries)
        return doomed
