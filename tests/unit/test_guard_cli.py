"""`ade guard classify`: a security reviewer's check of the configured policy on a file of statements."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ade_platform.cli import main
from ade_platform.lib.guard import GuardPolicy
from ade_platform.lib.guard.batch import run
from tests.conftest import REPO_ROOT

STATEMENTS = """SELECT COUNT(*) FROM orders
SHOW TABLES

{"sql": "SELECT email FROM users", "user": "analyst"}
{"sql": "SELECT * FROM prod_hr.salaries"}
DROP TABLE orders
{"not_sql": 1}
"""


def test_one_json_line_per_statement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "ade.yaml"
    config.write_text(
        "home: .ade\nsnowflake:\n  exclusions: {patterns: ['*.PROD_HR.*']}\n  defaults: {database: DB, schema: APP}\n"
    )
    source = tmp_path / "log.sql"
    source.write_text(STATEMENTS)
    code = main(["--config", str(config), "guard", "classify", str(source)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 1  # one input line was not a statement
    assert [r.get("classification") for r in lines] == ["SCALAR", "METADATA", "DATA", "DATA", "WRITE", None]
    assert set(lines[0]) == {"classification", "reasons", "objects", "excluded"}
    assert lines[3]["excluded"] == ["PROD_HR.SALARIES"] and lines[2]["objects"] == ["USERS"]
    assert lines[5] == {"line": 7, "error": "JSON line without a string `sql` field"}


def test_stdin_explain_and_context_overrides() -> None:
    out = io.StringIO()
    policy = GuardPolicy(exclusion_patterns=("OTHER.*.SECRETS",))
    assert (
        run(policy, io.StringIO("SELECT * FROM secrets\n"), out, database="OTHER", schema="S", explain=True)
        == 0
    )
    record = json.loads(out.getvalue())
    assert record["excluded"] == ["SECRETS"] and any("exclusion" in e for e in record["explanation"])


def test_console_entry_point_reads_stdin(tmp_path: Path) -> None:
    config = tmp_path / "ade.yaml"
    config.write_text("home: .ade\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ade_platform.cli", "--config", str(config), "guard", "classify"],
        input="SELECT MAX(ssn) FROM users\nSELECT COUNT(DISTINCT ssn) FROM users\n"
        + "SHOW MATERIALIZED VIEWS\nEXPLAIN SELECT 1\nCALL p()\n",
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    classes = [json.loads(line)["classification"] for line in proc.stdout.splitlines()]
    assert classes == ["DATA", "SCALAR", "METADATA", "METADATA", "WRITE"]
    assert "default policy" in proc.stderr
    # sqlglot's "unsupported syntax, falling back to Command" is one summary line, not one per statement.
    assert "unsupported syntax" not in proc.stderr
    assert proc.stderr.count("\n") == 2 and "3 statement(s)" in proc.stderr
