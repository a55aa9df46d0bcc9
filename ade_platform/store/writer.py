"""Publishing immutable snapshots and moving the "latest" pointer (no Dagster import)."""

from __future__ import annotations

import hashlib
import os
import re
import time
import uuid
from typing import Any

import orjson

from ade_platform.store.model import Provenance, StoreError, utc_now_iso
from ade_platform.store.paths import LocalRoot, StoreRoot, open_root

DATA_FILE = "data.json"
PROVENANCE_FILE = "provenance.json"
POINTER_FILE = "LATEST"
VERSIONS_DIR = "versions"
_ASSET_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
_STALE_TMP_SECONDS = 3600


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

    def __init__(self, root: str | os.PathLike[str] | StoreRoot, retention: int = 20):
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
        self.root.write_bytes_atomic(f"{asset}/{POINTER_FILE}", dumps({"version": version}))
        self.prune(asset, keep_version=version)
        return provenance

    def prune(self, asset: str, keep_version: str | None = None) -> list[str]:
        """Drop versions beyond the retention bound (never the current one) and stale temp folders."""
        entries = self.root.list_dir(f"{asset}/{VERSIONS_DIR}")
        versions = [e for e in entries if not e.startswith(".")]
        doomed = [v for v in versions[: max(0, len(versions) - self.retention)] if v != keep_version]
        for version in doomed:
            self.root.remove_tree(f"{asset}/{VERSIONS_DIR}/{version}")
        # A ".tmp" folder is what a killed writer leaves behind; once it is older than any write could
        # take, nobody will finish it. (Object stores have no temp folders: versions appear whole.)
        if isinstance(self.root, LocalRoot):
            now_ns = time.time_ns()
            for entry in entries:
                if entry.startswith(".") and entry.endswith(".tmp"):
                    self._remove_if_stale(f"{asset}/{VERSIONS_DIR}/{entry}", now_ns)
        return doomed

    def _remove_if_stale(self, rel: str, now_ns: int) -> None:
        assert isinstance(self.root, LocalRoot)
        try:
            mtime = os.stat(self.root.path / rel).st_mtime_ns
        except FileNotFoundError:
            return
        if now_ns - mtime > _STALE_TMP_SECONDS * 1_000_000_000:
            self.root.remove_tree(rel)
