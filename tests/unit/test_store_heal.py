"""The store heals (issue 38): uncommitted versions are never listed, a dead writer's leftovers go with the next
publish and `fsck --repair`, a live writer's stay, and a corrupt latest snapshot falls back to the one before.
The slow, real-kill versions of these are in tests/faults/test_store_faults.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ade_platform.store import CorruptSnapshot, StoreReader, StoreWriter
from ade_platform.store.fsck import fsck, latest_problem
from ade_platform.store.heal import leftovers
from ade_platform.store.paths import writer_id
from ade_platform.store.writer import new_version


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid  # reaped: no process has it (until the kernel reuses it, long after this test)


def _leave(store: Path, asset: str, pid: int, *, temp: bool) -> str:
    """What a writer with `pid` on this host leaves when killed half-way: a temp folder (local) or a version
    folder with data and no provenance.json (an fsspec root), one data file in it."""
    version = new_version()
    host = writer_id().split(":")[0]
    name = f".{version}.{host}.{pid}.abc123.tmp" if temp else version
    folder = store / asset / "versions" / name
    folder.mkdir(parents=True)
    (folder / "data.json").write_bytes(b'{"half": ')
    if not temp:
        (folder / ".writer").write_text(f"{host}:{pid}")
    return name


@pytest.mark.parametrize("temp", [True, False], ids=["temp-folder", "uncommitted-version"])
def test_a_dead_writers_leftover_is_never_listed_and_goes_with_the_next_publish(
    tmp_path: Path, temp: bool
) -> None:
    writer = StoreWriter(tmp_path)
    good = writer.publish("a", {"i": 1}).version
    dead = _leave(tmp_path, "a", _dead_pid(), temp=temp)
    alive = _leave(tmp_path, "a", os.getpid(), temp=temp)
    reader = StoreReader(tmp_path)
    assert reader.versions("a") == [good] and reader.latest("a").version == good
    found = {lo.entry: lo for lo in leftovers(writer.root, "a")}
    assert found[dead].abandoned and "is gone" in found[dead].why
    assert not found[alive].abandoned  # a publication in flight is left alone
    newer = writer.publish("a", {"i": 2}).version
    remaining = sorted(os.listdir(tmp_path / "a" / "versions"))
    assert remaining == sorted([good, newer, alive])
    assert reader.versions("a") == [good, newer]


def test_fsck_reports_and_repairs(tmp_path: Path) -> None:
    StoreWriter(tmp_path).publish("a", {"i": 1})
    dead = _leave(tmp_path, "a", _dead_pid(), temp=False)
    report = fsck(tmp_path)
    assert [(f.asset, f.problem, f.entry, f.repaired) for f in report] == [
        ("a", "leftover", f"versions/{dead}", False)
    ]
    assert [f.repaired for f in fsck(tmp_path, repair=True)] == [True]
    assert fsck(tmp_path) == []


def test_a_corrupt_latest_snapshot_falls_back_and_says_why(tmp_path: Path) -> None:
    writer = StoreWriter(tmp_path)
    good = writer.publish("a", {"i": 1}).version
    bad = writer.publish("a", {"i": 2}).version
    (tmp_path / "a" / "versions" / bad / "data.json").write_bytes(b'{"i": 3}')
    reader = StoreReader(tmp_path)
    snap = reader.latest("a")
    assert snap.version == good and snap.data == {"i": 1}
    assert (
        snap.fallback_reason and "checksum mismatch" in snap.fallback_reason and bad in snap.fallback_reason
    )
    assert "checksum mismatch" in (latest_problem(reader, "a") or "")
    assert [f.problem for f in fsck(tmp_path)] == ["corrupt_latest"]
    with pytest.raises(CorruptSnapshot):
        reader.get("a", bad)
    fixed = writer.publish("a", {"i": 4}).version
    assert reader.latest("a").version == fixed and reader.latest("a").fallback_reason is None


def test_an_observation_the_store_cannot_take_is_one_coded_log_line_and_said_in_the_next_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A store root that is a file, not a folder: every write fails for real (root or not)."""
    from mcp_bridge.context import BridgeContext
    from tests.conftest import settings_for

    blocked = tmp_path / "store"
    blocked.write_text("not a folder")
    settings = settings_for(tmp_path / "ade")
    settings = settings.model_copy(update={"store": settings.store.model_copy(update={"root": str(blocked)})})
    ctx = BridgeContext.from_settings(settings)
    caplog.set_level("WARNING", logger="ade.store")
    for n in range(3):
        ctx.observe("table_schema", f"demo:main.t{n}", {"columns": [n]}, source="warehouse_get_schema")
    assert ctx.flush_observations(30)
    lines = [r for r in caplog.records if "store_write_failed" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None  # once per code and minute, no traceback
    provenance: dict = {"source": "live"}
    ctx.note_unkept_observations(provenance)
    assert provenance["observations_not_kept"] == "store_write_failed"
