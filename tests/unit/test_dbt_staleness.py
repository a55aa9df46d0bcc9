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


def _log(project: Path, invocation: str, command: str, outcome: str, at: float, error: str = "") -> None:
    """One invocation in dbt's text log format, at epoch `at` (its date comes from the file's mtime)."""
    from datetime import UTC, datetime

    clock = datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S.%f")
    lines = [
        f"\n\n{'=' * 30} {clock} | {invocation} {'=' * 30}",
        f"\x1b[0m{clock} [info ] [MainThread]: Running with dbt=1.11.0",
        f"\x1b[0m{clock} [debug] [MainThread]: running dbt with arguments {{'invocation_command': 'dbt {command}'}}",
    ]
    if error:
        lines.append(f"\x1b[0m{clock} [error] [MainThread]: Encountered an error:\n{error}")
    if outcome:
        lines.append(
            f"\x1b[0m{clock} [debug] [MainThread]: Command `dbt {command}` {outcome} at {clock} after 1 s"
        )
    path = project / "logs" / "dbt.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write("\n".join(lines) + "\n")
    os.utime(path, (at + 1, at + 1))


def test_a_newer_failed_or_running_invocation_in_dbts_log_marks_the_results_stale(tmp_path: Path) -> None:
    from ade_platform.lib.dbt.invocations import InvocationLog

    store, project = tmp_path / "store", tmp_path / "project"
    writer, reader = StoreWriter(store), StoreReader(store)
    from datetime import UTC, datetime

    ten = float(int(time.time()) - 3600)  # the green run's artifact, an hour ago

    def artifact(name: str, invocation: str, at: float) -> Path:
        path = tmp_path / name
        generated = datetime.fromtimestamp(at, UTC).isoformat()
        path.write_text(
            json.dumps({**RUN_RESULTS, "metadata": {**RUN_RESULTS["metadata"], "invocation_id": invocation,
                                                    "generated_at": generated}})
        )  # fmt: skip
        return path

    rr = artifact("rr.json", "inv-green", ten)
    published = publish_artifact(writer, "run-results", rr)
    detector = StalenessDetector(reader, None, ttl=0, invocations=InvocationLog(project))
    assert detector.stale_reason(published) is None  # no log at all
    _log(project, "inv-green", "build", "succeeded", ten - 5)
    assert detector.stale_reason(published) is None
    assert detector.related_invocation(published) is not None
    assert detector.related_invocation(published)[1] is True  # type: ignore[index]  # that run is this snapshot

    _log(project, "inv-broken", "build", "failed", ten + 60, "Compilation Error in model b (models/b.sql)")
    reason = detector.stale_reason(published)
    assert reason is not None and "inv-brok" in reason and "parse" in reason and "Compilation Error" in reason
    found, this_run = detector.related_invocation(published)  # type: ignore[misc]
    assert (found.status, this_run) == ("parse_error", False)
    # A command that rewrites no run results does not count; a parse failure does, whatever the command.
    _log(project, "inv-ls", "ls", "succeeded", ten + 70)
    assert detector.stale_reason(published) is not None
    _log(project, "inv-running", "run -s b", "", ten + 80)
    assert "still running" in (detector.stale_reason(published) or "")
    # An older failure than the snapshot's artifact says nothing about it.
    later = artifact("later.json", "x", ten + 600)
    assert detector.stale_reason(publish_artifact(writer, "run-results", later)) is None


def test_the_gateway_publishes_newer_target_files_once_whoever_asks(tmp_path: Path) -> None:
    import threading

    from ade_platform.lib.dbt.refresh import BY_GATEWAY, TargetFolderPublisher, lock_path, publish_newer

    store, target = tmp_path / "store", tmp_path / "project" / "target"
    writer, reader = StoreWriter(store), StoreReader(store)
    _write(target / "run_results.json", time.time() - 60)
    publish_artifact(writer, "run-results", target / "run_results.json")
    lock = lock_path(tmp_path / "home", str(store), target)
    publishers = [TargetFolderPublisher(StoreWriter(store), target, lock) for _ in range(4)]
    assert publishers[0].refresh() == {}  # nothing newer
    _write(target / "run_results.json", time.time())  # dbt ran again, outside ADE
    before = len(reader.versions("dbt_run_results"))
    barrier = threading.Barrier(8)
    results: list[dict] = []

    def ask(publisher: TargetFolderPublisher) -> None:
        barrier.wait()
        results.append(publisher.refresh())

    threads = [threading.Thread(target=ask, args=(p,)) for p in publishers * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(1 for r in results if r) == 1  # eight concurrent answers, four gateways: one publication
    assert len(reader.versions("dbt_run_results")) == before + 1
    latest = reader.latest("dbt_run_results").provenance
    assert latest.source["published_by"] == BY_GATEWAY and latest.stamp()["published_by"] == BY_GATEWAY
    # The sensor's tick after it finds nothing left to publish.
    assert publish_newer(writer, reader, target, published_by="sensor", lock=lock) == {}
