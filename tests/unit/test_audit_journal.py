"""The audit journal: entries are durable lines of private files, only segments of dead processes on this host are
replayed, once; done entries drain; the journal is bounded and says why it refused an entry."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ade_platform.lib.audit_journal import AuditJournal, AuditNotKept, backlog, has_orphans, read_pending

REPO_ROOT = Path(__file__).resolve().parents[2]
_WRITE_AND_EXIT = """
import sys
from pathlib import Path
from ade_platform.lib.audit_journal import AuditJournal

journal = AuditJournal(Path(sys.argv[1]))
journal.begin(sys.argv[2], "snowfakery.run_recipe", {"ade/tool": "t"})
journal.end(sys.argv[3], "warehouse_execute", {"ade/tool": "w"}, started_at=1.0, error=None, elapsed_ms=2.5)
print(journal.begin(sys.argv[4], "x", {}))
journal.done([sys.argv[4]])
"""


def _segment_of_exited_process(home: Path) -> tuple[list[str], Path]:
    ids = [str(uuid.uuid4()) for _ in range(3)]
    done = subprocess.run(
        [sys.executable, "-c", _WRITE_AND_EXIT, str(home), *ids],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    return ids, Path(done.stdout.strip())


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_segment_is_a_private_file_naming_its_owner(tmp_path: Path) -> None:
    journal = AuditJournal(tmp_path)
    path = journal.begin("r-1", "snowfakery.run_recipe", {"ade/tool": "snowfakery.run_recipe"})
    owner, begin = _records(path)
    assert owner["k"] == "owner" and owner["pid"] == os.getpid() and owner["host"] == socket.gethostname()
    assert begin["k"] == "b" and begin["id"] == "r-1" and begin["tool"] == "snowfakery.run_recipe"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(journal.folder.stat().st_mode) == 0o700
    assert journal.claim_orphans() == [] and not has_orphans(tmp_path)  # its owner (this process) is alive
    assert backlog(tmp_path)[0] == 1


def test_done_entries_drain_and_the_segment_goes(tmp_path: Path) -> None:
    journal = AuditJournal(tmp_path)
    path = journal.begin("a", "t", {})
    journal.end("a", "t", {}, started_at=1.0, error=None, elapsed_ms=1.0)
    journal.end("b", "t", {}, started_at=2.0, error="Boom (x)", elapsed_ms=1.0)
    assert [e.run_id for e in read_pending(path)] == ["a", "b"]
    journal.done(["a"])
    assert path.exists() and [e.run_id for e in read_pending(path)] == ["b"]
    assert backlog(tmp_path) == (1, 2.0)
    journal.done(["b"])
    assert not path.exists() and backlog(tmp_path) == (0, None)


def test_orphans_are_claimed_once_and_a_dead_claimers_claim_is_taken_over(tmp_path: Path) -> None:
    (begun, ended, _finished), path = _segment_of_exited_process(tmp_path)
    assert has_orphans(tmp_path)
    journal = AuditJournal(tmp_path)
    ((entries, claim),) = journal.claim_orphans()
    by_id = {e.run_id: e for e in entries}
    assert set(by_id) == {begun, ended}  # the done one is not replayed
    assert not by_id[begun].ended and by_id[ended].ended and by_id[ended].elapsed_ms == 2.5
    assert not path.exists() and claim.exists()
    assert AuditJournal(tmp_path).claim_orphans() == []  # claimed by a live process (this one)

    exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_claim = claim.with_name(f"{path.name}.claimed-{int(exited.stdout)}")
    claim.rename(dead_claim)  # as left by a gateway that died while replaying it
    ((again, new_claim),) = journal.claim_orphans()
    assert {e.run_id for e in again} == {begun, ended} and new_claim == claim and not dead_claim.exists()


def test_other_hosts_and_torn_lines(tmp_path: Path) -> None:
    (begun, ended, _), path = _segment_of_exited_process(tmp_path)
    lines = path.read_text().splitlines()
    owner = json.loads(lines[0])
    path.write_text("\n".join([json.dumps({**owner, "host": "another-host"}), *lines[1:]]) + "\n")
    assert AuditJournal(tmp_path).claim_orphans() == [] and path.exists()  # its owner's host replays it
    path.write_text("\n".join(lines) + '\n{"k":"e","id":"torn')  # a crash in the middle of a line
    ((entries, _),) = AuditJournal(tmp_path).claim_orphans()
    assert {e.run_id for e in entries} == {begun, ended}


def test_the_journal_is_bounded_and_says_so(tmp_path: Path) -> None:
    journal = AuditJournal(tmp_path, max_bytes=2000, segment_bytes=1000)
    with pytest.raises(AuditNotKept) as refused:
        for n in range(100):
            journal.end(
                f"r-{n}", "t", {"ade/arguments": "x" * 100}, started_at=1.0, error=None, elapsed_ms=1.0
            )
    assert refused.value.code == "audit_journal_full"
    assert len(list(journal.folder.iterdir())) >= 2  # rotated before it was full
    journal.done([f"r-{n}" for n in range(100)])
    journal.end("after", "t", {}, started_at=1.0, error=None, elapsed_ms=1.0)  # room again once drained


def test_an_unwritable_journal_is_a_coded_refusal(tmp_path: Path) -> None:
    (tmp_path / "ade-audit-journal").write_text("a file where the folder should be")
    with pytest.raises(AuditNotKept) as refused:
        AuditJournal(tmp_path).end("r", "t", {}, started_at=1.0, error=None, elapsed_ms=1.0)
    assert refused.value.code == "audit_journal_unwritable"


def test_concurrent_appends_share_fsyncs_and_lose_nothing(tmp_path: Path) -> None:
    journal = AuditJournal(tmp_path)
    ids = [f"r-{n}" for n in range(400)]

    def write(chunk: list[str]) -> None:
        for run_id in chunk:
            journal.end(run_id, "t", {}, started_at=1.0, error=None, elapsed_ms=1.0)

    threads = [threading.Thread(target=write, args=(ids[n::8],)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert backlog(tmp_path)[0] == 400


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["b", "e", "d"]), st.integers(0, 5)), max_size=30))
def test_pending_is_what_was_begun_or_ended_and_not_done(
    tmp_path_factory: pytest.TempPathFactory, ops
) -> None:
    home = tmp_path_factory.mktemp("j")
    journal = AuditJournal(home)
    expected: dict[str, bool] = {}
    for kind, n in ops:
        run_id = f"r{n}"
        if kind == "b":
            journal.begin(run_id, "t", {})
            expected.setdefault(run_id, False)
        elif kind == "e":
            journal.end(run_id, "t", {}, started_at=1.0, error=None, elapsed_ms=1.0)
            expected[run_id] = True
        else:
            journal.done([run_id])
            expected.pop(run_id, None)
    pending = {e.run_id: e.ended for p in journal.folder.glob("*.jlog") for e in read_pending(p)}
    # a done entry re-begun later is pending again; what replay sees is exactly what is not yet recorded
    assert {k for k in pending} == set(expected)
    assert all(pending[k] or not expected[k] for k in expected)
