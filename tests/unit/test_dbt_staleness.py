"""The staleness detector: a newer artifact in the watched target folder, an ADE build not yet published."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ade_platform.lib.dbt.publish import mark_invocation, publish_artifact
from ade_platform.lib.dbt.staleness import StalenessDetector, newer_files, watched_target
from ade_platform.store import StoreReader, StoreWriter

RUN_RESULTS = {
    "metadata": {"dbt_schema_version": "https://schemas.getdbt.com/dbt/run-results/v6.json"},
    "results": [],
}


def _write(path: Path, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(RUN_RESULTS))
    os.utime(path, (mtime, mtime))


def test_a_newer_file_in_the_target_folder_marks_the_snapshot_stale(tmp_path: Path) -> None:
    store, target = tmp_path / "store", tmp_path / "project" / "target"
    writer, reader = StoreWriter(store), StoreReader(store)
    _write(target / "run_results.json", time.time() - 60)
    published = publish_artifact(writer, "run-results", target / "run_results.json")
    clock = [0.0]
    detector = StalenessDetector(reader, target, ttl=1.0, clock=lambda: clock[0])
    assert detector.stale_reason(published) is None  # the very file that was published
    assert newer_files(target, reader) == []

    _write(target / "run_results.json", time.time() + 5)  # dbt ran again, outside ADE
    assert detector.stale_reason(published) is None  # cached for ttl: no stat per call
    clock[0] = 2.0
    reason = detector.stale_reason(published)
    assert reason is not None and "run_results.json" in reason and str(tmp_path) not in reason
    assert [n.kind for n in newer_files(target, reader)] == ["run-results"]
    # Assets no dbt file supersedes are never flagged by it.
    assert detector.stale_reason(writer.publish("warehouse_schema_x", {"tables": []})) is None


def test_a_build_under_way_marks_earlier_snapshots_stale(tmp_path: Path) -> None:
    store = tmp_path / "store"
    writer, reader = StoreWriter(store), StoreReader(store)
    _write(tmp_path / "rr.json", time.time())
    published = publish_artifact(writer, "run-results", tmp_path / "rr.json")
    detector = StalenessDetector(reader, None, ttl=0)
    mark_invocation(writer, state="running", run_id="1234abcd-x", started_at="2999-01-01T00:00:00+00:00")
    assert "1234abcd" in (detector.stale_reason(published) or "")
    mark_invocation(writer, state="published", run_id="1234abcd-x", started_at="2999-01-01T00:00:00+00:00")
    assert detector.stale_reason(published) is None


def test_the_watched_folder_is_the_configured_one_else_the_projects_target(tmp_path: Path) -> None:
    assert watched_target(tmp_path / "t", tmp_path) == tmp_path / "t"
    assert watched_target(None, tmp_path) == tmp_path / "target"
    assert watched_target(None, None) is None
