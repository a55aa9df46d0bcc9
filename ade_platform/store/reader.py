"""Reading snapshots, with an in-memory cache that reloads only when an asset's pointer moves."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

from ade_platform.store.layout import DATA_FILE, POINTER_FILE, PROVENANCE_FILE, VERSIONS_DIR
from ade_platform.store.location import StoreLocation, open_root
from ade_platform.store.model import CorruptSnapshot, Provenance, SnapshotNotFound, StoreError
from ade_platform.store.paths import StoreRoot
from ade_platform.store.writer import check_asset_name

T = TypeVar("T")
log = logging.getLogger("ade.store")
_POINTER_RETRIES = 3


class Snapshot:
    """One immutable version of an asset. Parsed data and derived structures are memoized on it."""

    def __init__(self, root: StoreRoot, provenance: Provenance, files: dict[str, bytes]):
        self._root = root
        self.provenance = provenance
        self._files = files
        self._data: Any = None
        self._data_loaded = False
        self._derived: dict[str, Any] = {}
        self._lock = threading.Lock()
        # Set when this snapshot is served in place of a newer one that does not read back intact: why, for the
        # answer's provenance (stale, and saying so).
        self.fallback_reason: str | None = None

    @property
    def asset(self) -> str:
        return self.provenance.asset

    @property
    def version(self) -> str:
        return self.provenance.version

    def file(self, name: str) -> bytes:
        try:
            return self._files[name]
        except KeyError:
            raise StoreError(f"snapshot {self.version} of '{self.asset}' has no file {name!r}") from None

    @property
    def data(self) -> Any:
        if not self._data_loaded:
            try:
                self._data = orjson.loads(self.file(DATA_FILE))
            except orjson.JSONDecodeError as exc:
                raise CorruptSnapshot(
                    self.asset, self.version, f"data.json is not valid JSON ({exc})"
                ) from None
            self._data_loaded = True
        return self._data

    def derived(self, key: str, build: Callable[[Snapshot], T]) -> T:
        """Build (once per version) an in-memory structure from this snapshot, e.g. adjacency maps."""
        try:
            return self._derived[key]
        except KeyError:
            pass
        with self._lock:
            if key not in self._derived:
                self._derived[key] = build(self)
            return self._derived[key]


class StoreReader:
    """Reads the store. Thread-safe; one instance per process is enough."""

    def __init__(self, root: str | os.PathLike[str] | StoreLocation | StoreRoot):
        self.root = root if isinstance(root, StoreRoot) else open_root(root)
        self._cache: dict[str, tuple[Any, Snapshot]] = {}
        self._checked: dict[str, float] = {}
        self._lock = threading.Lock()

    def latest(self, asset: str) -> Snapshot:
        """The newest published snapshot; served from memory unless the pointer moved since last read."""
        check_asset_name(asset)
        cached = self._cache.get(asset)
        ttl = self.root.pointer_ttl
        if cached is not None and ttl and time.monotonic() - self._checked.get(asset, 0.0) < ttl:
            return cached[1]  # polled less than pointer_ttl seconds ago (object stores: saves a HEAD)
        signature = self.root.signature(f"{asset}/{POINTER_FILE}")
        self._checked[asset] = time.monotonic()
        if signature is None:
            raise SnapshotNotFound(asset)
        if cached is not None and cached[0] == signature:
            return cached[1]
        try:
            for _ in range(_POINTER_RETRIES):
                version = self._read_pointer(asset)
                try:
                    snapshot = self.get(asset, version)
                except SnapshotNotFound:
                    # The writer pruned the version between our pointer read and our file read: the pointer
                    # has moved on, so read it again.
                    signature = self.root.signature(f"{asset}/{POINTER_FILE}")
                    continue
                with self._lock:
                    self._cache[asset] = (signature, snapshot)
                return snapshot
            raise CorruptSnapshot(asset, None, "the pointer names a version that does not exist")
        except CorruptSnapshot as exc:
            if exc.version is None and cached is not None:
                # The pointer itself is unreadable (a torn write on a store without atomic PUTs): keep serving
                # what it named before, and look again on the next read.
                log.warning(
                    "store: snapshot_corrupt: keeping %s version %s: %s", asset, cached[1].version, exc
                )
                return cached[1]
            # What the pointer names does not verify (a torn, truncated or tampered file): serve the newest earlier
            # version that does, saying why, until the pointer moves on.
            fallback = self._previous_good(asset, exc)
            with self._lock:
                self._cache[asset] = (signature, fallback)
            return fallback

    def _previous_good(self, asset: str, exc: CorruptSnapshot) -> Snapshot:
        """The newest version older than a corrupt latest one that reads back intact, marked with why it is
        served; the corrupt snapshot's error when there is none. Logged once (the result is cached until the
        pointer moves)."""
        if exc.version is None:
            raise exc  # the pointer itself is unreadable: which version it meant is unknown
        for version in reversed(self.committed(asset)):
            if version >= exc.version:
                continue
            try:
                snapshot = self.get(asset, version)
            except StoreError:
                continue
            snapshot.fallback_reason = (
                f"the latest snapshot {exc.version} is corrupt ({exc.reason}); "
                f"serving the previous good version {version}"
            )
            log.warning("store: snapshot_corrupt: %s: %s", asset, snapshot.fallback_reason)
            return snapshot
        log.warning(
            "store: snapshot_corrupt: %s: %s; no earlier version reads back intact", asset, exc.reason
        )
        raise exc

    def get(self, asset: str, version: str) -> Snapshot:
        """A specific version (for history and "since when" questions)."""
        check_asset_name(asset)
        if "/" in version or version.startswith("."):
            raise StoreError(f"invalid version {version!r}")
        base = f"{asset}/{VERSIONS_DIR}/{version}"
        try:
            provenance_raw = self.root.read_bytes(f"{base}/{PROVENANCE_FILE}")
        except FileNotFoundError:
            raise SnapshotNotFound(asset, version) from None
        try:
            provenance = Provenance.from_dict(orjson.loads(provenance_raw))
        except (orjson.JSONDecodeError, TypeError) as exc:
            raise CorruptSnapshot(asset, version, f"provenance.json is unreadable ({exc})") from None
        files: dict[str, bytes] = {}
        for name in provenance.files:
            try:
                files[name] = self.root.read_bytes(f"{base}/{name}")
            except FileNotFoundError:
                raise CorruptSnapshot(asset, version, f"file {name!r} is missing") from None
        self._verify(provenance, files)
        return Snapshot(self.root, provenance, files)

    def latest_provenance(self, asset: str) -> Provenance:
        """The newest snapshot's provenance without reading its files: what "is anything newer than this?"
        needs (from memory when the pointer has not moved; else the pointer and provenance.json)."""
        check_asset_name(asset)
        signature = self.root.signature(f"{asset}/{POINTER_FILE}")
        if signature is None:
            raise SnapshotNotFound(asset)
        cached = self._cache.get(asset)
        if cached is not None and cached[0] == signature:
            return cached[1].provenance
        version = self._read_pointer(asset)
        try:
            raw = self.root.read_bytes(f"{asset}/{VERSIONS_DIR}/{version}/{PROVENANCE_FILE}")
            return Provenance.from_dict(orjson.loads(raw))
        except FileNotFoundError:
            raise SnapshotNotFound(asset, version) from None
        except (orjson.JSONDecodeError, TypeError) as exc:
            raise CorruptSnapshot(asset, version, f"provenance.json is unreadable ({exc})") from None

    def provenance(self, asset: str, version: str | None = None) -> Provenance:
        return (self.latest(asset) if version is None else self.get(asset, version)).provenance

    def versions(self, asset: str) -> list[str]:
        """The published versions, oldest first: committed (provenance.json written) and no newer than what
        the pointer names. A publication in flight or a killed writer's leftovers are not among them."""
        check_asset_name(asset)
        committed = self.committed(asset)
        try:
            pointed = self._read_pointer(asset)
        except SnapshotNotFound:
            return []
        except CorruptSnapshot:
            return committed
        return [v for v in committed if v <= pointed]

    def committed(self, asset: str) -> list[str]:
        """Every version whose publication finished writing (provenance.json there), oldest first."""
        entries = self.root.version_entries(f"{asset}/{VERSIONS_DIR}")
        return [v for v, committed in entries.items() if committed]

    def history(self, asset: str) -> list[Provenance]:
        """Provenance of every retained version, oldest first; unreadable versions are skipped."""
        result = []
        for version in self.versions(asset):
            try:
                raw = self.root.read_bytes(f"{asset}/{VERSIONS_DIR}/{version}/{PROVENANCE_FILE}")
                result.append(Provenance.from_dict(orjson.loads(raw)))
            except (FileNotFoundError, orjson.JSONDecodeError, TypeError):
                continue
        return result

    def assets(self) -> list[str]:
        return [a for a in self.root.list_dir("") if not a.startswith(".")]

    def _read_pointer(self, asset: str) -> str:
        try:
            raw = self.root.read_bytes(f"{asset}/{POINTER_FILE}")
        except FileNotFoundError:
            raise SnapshotNotFound(asset) from None
        try:
            version = orjson.loads(raw)["version"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise CorruptSnapshot(asset, None, "the LATEST pointer is not valid") from None
        if not isinstance(version, str) or "/" in version or version.startswith("."):
            raise CorruptSnapshot(asset, None, "the LATEST pointer is not valid")
        return version

    @staticmethod
    def _verify(provenance: Provenance, files: dict[str, bytes]) -> None:
        import hashlib

        for name, expected in provenance.files.items():
            if hashlib.sha256(files[name]).hexdigest() != expected:
                raise CorruptSnapshot(provenance.asset, provenance.version, f"checksum mismatch in {name!r}")
