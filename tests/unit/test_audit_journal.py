"""The audit journal: intents are durable files, only orphans of dead processes on this host are claimed, once."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import uuid
from pathlib import Path

from ade_platform.lib.audit_journal import AuditJournal

REPO_ROOT = Path(__file__).resolve().parents[2]
_WRITE_AND_EXIT = """
import sys
from pathlib import Path
from ade_platform.lib.audit_journal import AuditJournal

print(AuditJournal(Path(sys.argv[1])).write(sys.argv[2], "snowfakery.run_recipe", {"ade/tool": "t"}))
"""


def _intent_of_exited_process(home: Path) -> tuple[str, Path]:
    run_id = str(uuid.uuid4())
    done = subprocess.run(
        [sys.executable, "-c", _WRITE_AND_EXIT, str(home), run_id],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    return run_id, Path(done.stdout.strip())


def test_an_intent_is_a_private_file_naming_its_owner(tmp_path: Path) -> None:
    journal = AuditJournal(tmp_path)
    path = journal.write("r-1", "snowfakery.run_recipe", {"ade/tool": "snowfakery.run_recipe"})
    data = json.loads(path.read_text())
    assert data["run_id"] == "r-1" and data["tool"] == "snowfakery.run_recipe"
    assert data["owner_pid"] == os.getpid() and data["owner_host"] and data["started_at"].endswith("Z")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(journal.folder.stat().st_mode) == 0o700
    assert journal.claim_orphans() == []  # its owner (this process) is alive


def test_orphans_are_claimed_once_and_a_dead_claimers_claim_is_taken_over(tmp_path: Path) -> None:
    run_id, path = _intent_of_exited_process(tmp_path)
    journal = AuditJournal(tmp_path)
    (claimed,) = journal.claim_orphans()
    intent, claim = claimed
    assert intent.run_id == run_id and not path.exists() and claim.exists()
    assert AuditJournal(tmp_path).claim_orphans() == []  # claimed by a live process (this one)

    exited = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_claim = claim.with_name(f"{run_id}.claimed-{int(exited.stdout)}")
    claim.rename(dead_claim)  # as left by an auditor that died while recording it
    ((again, new_claim),) = journal.claim_orphans()
    assert again.run_id == run_id and new_claim == claim and not dead_claim.exists()


def test_other_hosts_and_torn_intents(tmp_path: Path) -> None:
    _, path = _intent_of_exited_process(tmp_path)
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "owner_host": "another-host"}))
    torn_recent = path.with_name(f"{uuid.uuid4()}.intent.json")
    torn_recent.write_text("")
    torn_old = path.with_name(f"{uuid.uuid4()}.intent.json")
    torn_old.write_text('{"run_id": ')
    os.utime(torn_old, (0, 0))
    assert AuditJournal(tmp_path).claim_orphans() == []
    assert path.exists()  # its owner's host recovers it
    assert torn_recent.exists()  # may be an intent being written
    assert not torn_old.exists()  # its call never started: nothing to record
