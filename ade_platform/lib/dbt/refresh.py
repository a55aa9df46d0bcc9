"""Publishing what dbt runs outside ADE wrote into the watched target folder, by whoever looks first.

The gateway does it at answer time (before a dbt snapshot is read: one `stat` per artifact file when nothing
changed), and the Dagster sensor does it on its tick when a daemon runs; both go through `publish_newer`, under
one file lock, and re-check under it, so a file is published once whoever gets there first. The store's writer is
atomic, so a reader never sees half a publication either way. No Dagster import here.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from ade_platform.lib.dbt.artifacts import ARTIFACT_FILES, ArtifactError, gc_paused
from ade_platform.lib.dbt.publish import (
    ARTIFACT_ASSETS,
    publish_index,
    publish_lineage_index,
    publish_parsed,
)
from ade_platform.lib.dbt.staleness import newer_files
from ade_platform.store import CorruptSnapshot, Provenance, SnapshotNotFound, StoreReader, StoreWriter

log = logging.getLogger("ade.dbt")
LOCK_WAIT_SECONDS = 30.0
_KINDS = ("run-results", "manifest", "catalog", "sources")
# Who published a snapshot from the target folder (stamped on answers as provenance.published_by).
BY_GATEWAY = "ade gateway (dbt outside ADE, published at answer time)"
BY_SENSOR = "dagster sensor dbt_target_folder_sensor (dbt outside ADE)"


def lock_path(home: Path, store_root: str, target_dir: Path) -> Path:
    """The lock every publisher of one target folder into one store takes (gateways and the sensor)."""
    digest = hashlib.sha256(f"{store_root}|{target_dir}".encode()).hexdigest()[:16]
    return home / "locks" / f"dbt-target-{digest}.lock"


@contextlib.contextmanager
def _exclusive(path: Path, wait: float) -> Iterator[bool]:
    """An exclusive advisory lock on `path`, waited for at most `wait` seconds; yields whether it was taken."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.02)
        yield True
    finally:
        os.close(fd)  # closing releases the lock


def publish_newer(
    writer: StoreWriter,
    reader: StoreReader,
    target_dir: Path,
    *,
    published_by: str,
    lock: Path | None = None,
    run_id: str | None = None,
) -> dict[str, str]:
    """Publish each artifact in target_dir that is newer than the store's snapshot of its kind, then the lineage
    index when the manifest or the catalog moved. Returns {kind: version} of what was published. Unreadable files
    (dbt still writing) are skipped: the next look retries them. PublisherBusy when another process holds the
    lock past LOCK_WAIT_SECONDS."""
    with _exclusive(lock, LOCK_WAIT_SECONDS) if lock is not None else contextlib.nullcontext(True) as held:
        if not held:
            raise PublisherBusy(f"another publisher holds {lock}")
        # Re-checked under the lock: another process may have published these very files meanwhile.
        kinds = {n.kind for n in newer_files(target_dir, reader)}
        published: dict[str, str] = {}
        parsed: dict[str, tuple[Provenance, dict[str, Any]]] = {}
        for kind in _KINDS:
            if kind not in kinds:
                continue
            try:
                parsed[kind] = publish_parsed(
                    writer, kind, target_dir / ARTIFACT_FILES[kind], run_id=run_id, origin=published_by
                )
            except (ArtifactError, OSError, orjson.JSONDecodeError) as exc:
                log.info("not publishing %s yet: %s", ARTIFACT_FILES[kind], exc)
                continue
            published[kind] = parsed[kind][0].version
        if "manifest" in parsed:
            catalog = parsed.get("catalog") or _stored(reader, "catalog")
            manifest_prov, manifest = parsed["manifest"]
            index_prov, _ = publish_index(
                writer, manifest, manifest_prov, catalog[1] if catalog else None,
                catalog[0] if catalog else None, run_id,
            )  # fmt: skip
            published["lineage_index"] = index_prov.version
        elif "catalog" in parsed:
            with contextlib.suppress(SnapshotNotFound):  # no manifest yet: the index comes with it
                published["lineage_index"] = publish_lineage_index(writer, reader, run_id=run_id)[0].version
        return published


def _stored(reader: StoreReader, kind: str) -> tuple[Provenance, dict[str, Any]] | None:
    try:
        snapshot = reader.latest(ARTIFACT_ASSETS[kind])
        with gc_paused():
            return snapshot.provenance, orjson.loads(snapshot.file("data.json"))
    except (SnapshotNotFound, CorruptSnapshot):
        return None


class PublisherBusy(Exception):
    """Another process held the publication lock past LOCK_WAIT_SECONDS: nothing was published."""


class TargetFolderPublisher:
    """The gateway's publisher of one watched target folder, called before every read of a dbt snapshot.

    When no artifact file changed since the last look it costs one `stat` per file. When one did, it publishes
    the newer ones (`publish_newer`); concurrent calls in this process wait for that one publication instead of
    starting their own. A file that could not be read is not retried until it changes again.
    """

    def __init__(self, writer: StoreWriter, target_dir: Path, lock: Path, published_by: str = BY_GATEWAY):
        self.writer = writer
        # A reader of its own: publishing never re-enters the bridge reader that calls refresh().
        self.reader = StoreReader(writer.root)
        self.target_dir = target_dir
        self.lock = lock
        self.published_by = published_by
        self._paths = [os.fspath(target_dir / ARTIFACT_FILES[k]) for k in _KINDS]
        self._seen: tuple[Any, ...] | None = None
        self._lock = threading.Lock()

    def _signature(self) -> tuple[Any, ...]:
        out = []
        for path in self._paths:
            try:
                st = os.stat(path)
                out.append((st.st_mtime_ns, st.st_size))
            except (FileNotFoundError, NotADirectoryError):
                out.append(None)
        return tuple(out)

    def refresh(self) -> dict[str, str]:
        signature = self._signature()
        if signature == self._seen:
            return {}
        with self._lock:
            if signature == self._seen:  # another thread published these files while this one waited
                return {}
            try:
                published = publish_newer(
                    self.writer, self.reader, self.target_dir, published_by=self.published_by, lock=self.lock
                )
            except PublisherBusy as exc:
                log.warning("not publishing the dbt target folder now: %s", exc)
                return {}  # looked at again on the next read
            self._seen = signature
        if published:
            log.info("published from the dbt target folder at answer time: %s", published)
        return published
