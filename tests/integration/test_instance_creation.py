"""A fresh DAGSTER_HOME opened by several processes at once — the gateway, its audit worker, a test or an
operator's `ade status`, the daemon and UI of `ade dev` — ends with one well-formed instance.

Dagster's SQLite storages create their tables and stamp their migration revision on first open, unguarded: two
first openers each stamp `head`, and every later open fails with "Version table 'alembic_version' has more than
one head present". `open_instance` serializes the opening on a lock file in the home.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

_OPENER = """
import sys, time
from pathlib import Path
from ade_platform.instance import open_instance
home, go, ready = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
ready.touch()
while not go.exists():  # Dagster is imported by now: every process opens at the same moment
    time.sleep(0.005)
instance = open_instance(home, compute_logs=False)
instance.get_runs(limit=1)
print("opened")
"""

OPENERS = 6


def _stamped_revisions(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return [row[0] for row in connection.execute("select version_num from alembic_version")]


def test_processes_opening_a_fresh_home_at_once_leave_one_revision_per_storage(tmp_path: Path) -> None:
    home, go = tmp_path / "dagster", tmp_path / "go"
    preload = "import dagster, ade_platform.instance\n"  # the slow part, done before the start signal
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", preload + _OPENER, str(home), str(go), str(tmp_path / f"ready-{n}")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(OPENERS)
    ]
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("ready-*"))) < OPENERS and time.monotonic() < deadline:
        time.sleep(0.05)
    go.touch()
    outcomes = [opener.communicate(timeout=120) for opener in openers]
    failures = [err[-800:] for (out, err), opener in zip(outcomes, openers, strict=True) if opener.returncode]
    assert not failures, failures
    for db in ("history/runs.db", "schedules/schedules.db", "history/runs/index.db"):
        assert len(_stamped_revisions(home / db)) == 1, db
