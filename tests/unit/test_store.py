"""The asset store: immutability, atomic publication, cache behaviour, retention, failure modes."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ade_platform.store import CorruptSnapshot, SnapshotNotFound, StoreError, StoreReader, StoreWriter
from ade_platform.store.paths import LocalRoot


def test_publish_then_read_roundtrip_with_provenance(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path)
    prov = writer.publish("dbt_manifest", {"nodes": {"a": 1}}, run_id="run-1", source={"path": "x.json"})
    snap = StoreReader(tmp_path).latest("dbt_manifest")
    assert snap.data == {"nodes": {"a": 1}}
    assert snap.version == prov.version
    assert snap.provenance.run_id == "run-1"
    assert snap.provenance.source == {"path": "x.json"}
    stamp = snap.provenance.stamp()
    assert stamp["source"] == "cache" and stamp["asset"] == "dbt_manifest" and stamp["age_seconds"] >= 0


def test_versions_are_ordered_and_bounded_by_retention(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path, retention=3)
    published = [writer.publish("a", {"i": i}).version for i in range(7)]
    reader = StoreReader(tmp_path)
    assert reader.versions("a") == published[-3:]
    assert [p.version for p in reader.history("a")] == published[-3:]
    assert reader.latest("a").data == {"i": 6}
    assert reader.get("a", published[-2]).data == {"i": 5}
    with pytest.raises(SnapshotNotFound):
        reader.get("a", published[0])


class CountingRoot(LocalRoot):
    def __init__(self, path: Path):
        super().__init__(path)
        self.reads = 0

    def read_bytes(self, rel: str) -> bytes:
        self.reads += 1
        return super().read_bytes(rel)


def test_reader_cache_reloads_only_when_pointer_moves(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path)
    writer.publish("a", {"i": 1})
    root = CountingRoot(tmp_path.resolve())
    reader = StoreReader(root)
    first = reader.latest("a")
    reads_after_first = root.reads
    for _ in range(50):
        assert reader.latest("a") is first
    assert root.reads == reads_after_first, "an unchanged pointer must not re-read any file"
    writer.publish("a", {"i": 2})
    assert reader.latest("a").data == {"i": 2}
    assert root.reads > reads_after_first


def test_derived_structures_are_built_once_per_version(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path)
    writer.publish("a", {"i": 1})
    reader = StoreReader(tmp_path)
    calls = []
    build = lambda snap: calls.append(snap.version) or {"double": snap.data["i"] * 2}  # noqa: E731
    assert reader.latest("a").derived("x", build) == {"double": 2}
    assert reader.latest("a").derived("x", build) == {"double": 2}
    writer.publish("a", {"i": 5})
    assert reader.latest("a").derived("x", build) == {"double": 10}
    assert len(calls) == 2


def test_missing_asset_and_bad_names_are_clear_errors(tmp_path: Path) -> None:
    reader = StoreReader(tmp_path)
    with pytest.raises(SnapshotNotFound, match=r"no snapshot"):
        reader.latest("dbt_manifest")
    for bad in ("../etc", "a/b", "", ".hidden"):
        with pytest.raises(StoreError):
            reader.latest(bad)
    with pytest.raises(StoreError):
        reader.get("a", "../../x")


def test_corrupt_pointer_data_and_missing_version_are_clear_errors(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path)
    prov = writer.publish("a", {"i": 1})
    (tmp_path / "a" / "LATEST").write_text("{not json")
    with pytest.raises(CorruptSnapshot, match="pointer"):
        StoreReader(tmp_path).latest("a")

    (tmp_path / "a" / "LATEST").write_text('{"version": "00000000000000000001-deadbeef"}')
    with pytest.raises(CorruptSnapshot, match="does not exist"):
        StoreReader(tmp_path).latest("a")

    (tmp_path / "a" / "LATEST").write_text(f'{{"version": "{prov.version}"}}')
    data_file = tmp_path / "a" / "versions" / prov.version / "data.json"
    data_file.write_text('{"i": 2}')
    with pytest.raises(CorruptSnapshot, match="checksum"):
        StoreReader(tmp_path).latest("a")

    data_file.unlink()
    with pytest.raises(CorruptSnapshot, match="missing"):
        StoreReader(tmp_path).latest("a")

    (tmp_path / "a" / "versions" / prov.version / "provenance.json").write_text("garbage")
    with pytest.raises(CorruptSnapshot, match="provenance"):
        StoreReader(tmp_path).latest("a")


def test_object_storage_urls_work_through_upath() -> None:
    root = "memory://ade-store-test"
    writer = StoreWriter(root, retention=2)
    for i in range(3):
        writer.publish("remote", {"i": i})
    reader = StoreReader(root)
    assert reader.latest("remote").data == {"i": 2}
    assert len(reader.versions("remote")) == 2


# --- concurrency: a reader in another process during hundreds of writes -------------------------------

N_WRITES = 300


def _writer_proc(root: str, ready) -> None:
    writer = StoreWriter(root, retention=5)
    ready.wait()
    for i in range(1, N_WRITES + 1):
        # The payload and the provenance both carry i: a mixed snapshot would disagree.
        writer.publish("busy", {"i": i, "payload": [i] * 2000}, source={"i": i})


def _reader_proc(root: str, ready, out) -> None:
    reader = StoreReader(root)
    seen, errors, mixed, last = 0, [], 0, 0
    ready.wait()
    while last < N_WRITES:
        try:
            snap = reader.latest("busy")
        except SnapshotNotFound:
            continue
        except StoreError as exc:
            errors.append(repr(exc))
            continue
        data = snap.data
        i = data["i"]
        if snap.provenance.source.get("i") != i or any(x != i for x in data["payload"]) or i < last:
            mixed += 1
        last = max(last, i)
        seen += 1
    out.put({"seen": seen, "errors": errors, "mixed": mixed, "last": last})


def test_reader_in_another_process_never_sees_partial_or_mixed_snapshots(tmp_path: Path) -> None:
    ctx = mp.get_context("spawn")
    ready = ctx.Event()
    out = ctx.Queue()
    StoreWriter(tmp_path).publish("busy", {"i": 0, "payload": []}, source={"i": 0})
    reader = ctx.Process(target=_reader_proc, args=(str(tmp_path), ready, out))
    writer = ctx.Process(target=_writer_proc, args=(str(tmp_path), ready))
    reader.start()
    writer.start()
    ready.set()
    writer.join(120)
    result = out.get(timeout=120)
    reader.join(30)
    assert writer.exitcode == 0
    assert result["errors"] == [] and result["mixed"] == 0
    assert result["last"] == N_WRITES and result["seen"] > 10


# --- a writer killed mid-write ------------------------------------------------------------------------

_KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from ade_platform.store import StoreWriter
    from ade_platform.store import paths

    root, stage = sys.argv[1], sys.argv[2]
    writer = StoreWriter(root)
    real_replace = os.replace
    real_fsync = os.fsync
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    if stage == "files":
        # Killed while the version folder is half written.
        calls = {"n": 0}
        def fsync(fd):
            calls["n"] += 1
            if calls["n"] == 2:
                die()
            return real_fsync(fd)
        paths.os.fsync = fsync
    else:
        # Killed after the version folder is in place, before the pointer moves.
        def replace(src, dst):
            if str(dst).endswith("LATEST"):
                die()
            return real_replace(src, dst)
        paths.os.replace = replace
    writer.publish("victim", files={"a.json": b'{"v": 2}', "b.json": b'{"v": 2}', "c.json": b'{"v": 2}'})
    """
)


@pytest.mark.parametrize("stage", ["files", "pointer"])
def test_writer_killed_mid_write_leaves_previous_version_readable(tmp_path: Path, stage: str) -> None:
    writer = StoreWriter(tmp_path)
    good = writer.publish(
        "victim", files={"a.json": b'{"v": 1}', "b.json": b'{"v": 1}', "c.json": b'{"v": 1}'}
    )
    proc = subprocess.run(
        [sys.executable, "-c", _KILLER, str(tmp_path), stage], capture_output=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    reader = StoreReader(tmp_path)
    snap = reader.latest("victim")
    assert snap.version == good.version
    assert snap.file("a.json") == b'{"v": 1}'
    # Leftovers are invisible to readers, and the next writer carries on.
    assert all(not v.startswith(".") for v in reader.versions("victim"))
    after = StoreWriter(tmp_path).publish("victim", {"v": 3})
    assert reader.latest("victim").version == after.version
    assert os.path.isdir(tmp_path / "victim" / "versions" / good.version)


def test_abandoned_temp_folders_are_swept_after_the_stale_bound(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path)
    writer.publish("a", {"i": 1})
    versions = tmp_path / "a" / "versions"
    fresh = versions / ".fresh.tmp"
    old = versions / ".old.tmp"
    fresh.mkdir()
    old.mkdir()
    os.utime(old, (1, 1))
    writer.publish("a", {"i": 2})
    assert fresh.exists(), "a temp folder young enough to belong to a live writer must stay"
    assert not old.exists()
