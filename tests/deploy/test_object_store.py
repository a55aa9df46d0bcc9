"""The asset store on an S3-compatible server (moto's standalone server, on loopback): publication order,
conditional pointer writes, readers in other processes, killed and racing writers, retention."""

from __future__ import annotations

import dataclasses
import multiprocessing as mp
import signal
import subprocess
import sys
import textwrap

import boto3
import pytest

from ade_platform.store import (
    CorruptSnapshot,
    SnapshotNotFound,
    StoreError,
    StoreLocation,
    StoreReader,
    StoreWriter,
)
from ade_platform.store.location import open_root
from ade_platform.store.s3 import S3Root
from tests.deploy.conftest import _creds

pytestmark = pytest.mark.integration
N_WRITES = 200


def test_roundtrip_history_and_etag_cache(s3_root: StoreLocation) -> None:
    root = open_root(s3_root)
    assert isinstance(root, S3Root) and root.supports_conditional_pointer
    writer = StoreWriter(s3_root, retention=3)
    first = writer.publish("asset", {"i": 1}, run_id="r1", source={"k": "v"})
    reader = StoreReader(s3_root)
    snap = reader.latest("asset")
    assert snap.data == {"i": 1} and snap.provenance.run_id == "r1" and snap.provenance.source == {"k": "v"}
    assert reader.latest("asset") is snap  # same ETag: served from memory
    for i in range(2, 6):
        writer.publish("asset", {"i": i})
    assert reader.latest("asset").data == {"i": 5}
    assert len(reader.versions("asset")) == 3 and first.version not in reader.versions("asset")
    assert [p.version for p in reader.history("asset")] == reader.versions("asset")
    assert reader.assets() == ["asset"]
    with pytest.raises(SnapshotNotFound):
        reader.latest("never")


def test_pointer_ttl_saves_polls_and_still_moves(s3_endpoint: str, s3_root: StoreLocation) -> None:
    s3_root = dataclasses.replace(s3_root, pointer_ttl_seconds=30)
    writer = StoreWriter(s3_root)
    writer.publish("ttl", {"i": 1})
    reader = StoreReader(s3_root)
    assert reader.latest("ttl").data == {"i": 1}
    writer.publish("ttl", {"i": 2})
    assert reader.latest("ttl").data == {"i": 1}  # within the TTL: no HEAD, the cached version
    assert StoreReader(s3_root).latest("ttl").data == {"i": 2}  # a new reader polls


def test_pointer_never_moves_backwards(s3_root: StoreLocation) -> None:
    writer = StoreWriter(s3_root)
    newer = writer.publish("race", {"i": 2})
    # A slow writer whose version is older finishes after the newer one: the pointer keeps the newer.
    older_version = "00000000000000000001-aaaaaaaa"
    root = open_root(s3_root)
    root.write_dir_atomic(f"race/versions/{older_version}", {"data.json": b"{}", "provenance.json": b"{}"})
    writer._move_pointer("race", older_version)
    assert StoreReader(s3_root).latest("race").version == newer.version


def _writer_proc(root: StoreLocation, ready, tag: int) -> None:
    writer = StoreWriter(root, retention=5)
    ready.wait()
    for i in range(1, N_WRITES + 1):
        value = i * 10 + tag
        writer.publish("busy", {"i": value, "payload": [value] * 500}, source={"i": value})


def _reader_proc(root: StoreLocation, ready, stop, out) -> None:
    reader = StoreReader(root)
    seen, errors, mixed, backwards, last_version = 0, [], 0, 0, ""
    ready.wait()
    while not stop.is_set():
        try:
            snap = reader.latest("busy")
        except StoreError as exc:
            errors.append(repr(exc)[:200])
            continue
        i = snap.data["i"]
        if snap.provenance.source.get("i") != i or any(x != i for x in snap.data["payload"]):
            mixed += 1
        if snap.version < last_version:
            backwards += 1
        last_version = max(last_version, snap.version)
        seen += 1
    out.put({"seen": seen, "errors": errors, "mixed": mixed, "backwards": backwards})


@pytest.mark.slow
def test_two_writers_and_two_readers_never_see_a_torn_mixed_or_older_snapshot(s3_root: StoreLocation) -> None:
    StoreWriter(s3_root).publish("busy", {"i": 0, "payload": []}, source={"i": 0})
    ctx = mp.get_context("spawn")
    ready, stop, out = ctx.Event(), ctx.Event(), ctx.Queue()
    readers = [ctx.Process(target=_reader_proc, args=(s3_root, ready, stop, out)) for _ in range(2)]
    writers = [ctx.Process(target=_writer_proc, args=(s3_root, ready, tag)) for tag in (1, 2)]
    for p in [*readers, *writers]:
        p.start()
    ready.set()
    for w in writers:
        w.join(600)
    stop.set()
    results = [out.get(timeout=120) for _ in readers]
    for r in readers:
        r.join(30)
    assert all(w.exitcode == 0 for w in writers)
    for result in results:
        assert result["errors"] == [] and result["mixed"] == 0 and result["backwards"] == 0
        assert result["seen"] > 10
    reader = StoreReader(s3_root)
    # the pointer names the newest version either writer published, and retention kept only unreferenced ones
    assert reader.latest("busy").version == max(reader.versions("busy"))
    assert len(reader.versions("busy")) <= 5 + 2


_KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from ade_platform.store import S3Options, StoreLocation, StoreWriter
    from ade_platform.store.s3 import S3Root

    url, stage, endpoint, key, secret = sys.argv[1:6]
    root = StoreLocation(url, S3Options(endpoint_url=endpoint, access_key_id=key, secret_access_key=secret,
                                        region="us-east-1"))
    real_put = S3Root.write_bytes_atomic
    real_cas = S3Root.put_if
    puts = {"n": 0}
    def put(self, rel, data):
        puts["n"] += 1
        if stage == "files" and puts["n"] == 2:
            os.kill(os.getpid(), signal.SIGKILL)   # half the data files are up, no provenance
        if stage == "provenance" and rel.endswith("provenance.json"):
            os.kill(os.getpid(), signal.SIGKILL)   # every data file is up, provenance not
        return real_put(self, rel, data)
    def cas(self, rel, data, etag):
        os.kill(os.getpid(), signal.SIGKILL)       # the version is complete, the pointer not moved
    S3Root.write_bytes_atomic = put
    S3Root.put_if = cas
    StoreWriter(root).publish("victim", files={"a.json": b'{"v": 2}', "b.json": b'{"v": 2}', "c.json": b'{"v": 2}'})
    """
)


@pytest.mark.parametrize("stage", ["files", "provenance", "pointer"])
def test_writer_killed_mid_publish_leaves_previous_version_served(
    s3_endpoint: str, s3_root: StoreLocation, stage: str
) -> None:
    good = StoreWriter(s3_root).publish("victim", files={"a.json": b'{"v": 1}', "b.json": b'{"v": 1}'})
    creds = _creds()
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            _KILLER,
            s3_root.url,
            stage,
            s3_endpoint,
            creds["aws_access_key_id"],
            creds["aws_secret_access_key"],
        ],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()[-2000:]
    reader = StoreReader(s3_root)
    snap = reader.latest("victim")
    assert snap.version == good.version and snap.file("a.json") == b'{"v": 1}'
    after = StoreWriter(s3_root).publish("victim", {"v": 3})
    assert reader.latest("victim").version == after.version


def test_a_reader_keeps_the_previous_good_version_when_the_new_one_does_not_verify(
    s3_endpoint: str, s3_root: StoreLocation
) -> None:
    writer = StoreWriter(s3_root)
    writer.publish("torn", {"i": 1})
    reader = StoreReader(s3_root)
    assert reader.latest("torn").data == {"i": 1}
    bad = writer.publish("torn", {"i": 2})
    bucket, prefix = s3_root.url.removeprefix("s3://").split("/", 1)
    client = boto3.client("s3", endpoint_url=s3_endpoint, **_creds())
    client.put_object(
        Bucket=bucket, Key=f"{prefix}/torn/versions/{bad.version}/data.json", Body=b'{"i": 666}'
    )
    assert reader.latest("torn").data == {"i": 1}  # checksum mismatch: the previous good version is kept
    fresh = StoreReader(s3_root).latest("torn")  # a fresh reader falls back to it too, and says why
    assert fresh.data == {"i": 1} and "checksum" in (fresh.fallback_reason or "")
    client.delete_object(Bucket=bucket, Key=f"{prefix}/torn/versions/{fresh.version}/data.json")
    with pytest.raises(CorruptSnapshot, match="checksum"):
        StoreReader(s3_root).latest("torn")  # a reader with nothing good to fall back on says so
    writer.publish("torn", {"i": 3})
    assert reader.latest("torn").data == {"i": 3}
