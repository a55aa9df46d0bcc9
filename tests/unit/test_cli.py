"""The `ade` command line: what every command shares."""

from __future__ import annotations

import pytest

from ade_platform import __version__
from ade_platform.cli import main
from ade_platform.config import Settings


def test_version_names_the_installed_distribution(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out == f"ade-platform {__version__}"
    assert __version__[0].isdigit() and __version__ != "0+unknown"


def test_status_names_the_audit_journals_backlog(tmp_settings: Settings) -> None:
    from ade_platform.cli import audit_backlog_note
    from ade_platform.lib.audit_journal import AuditJournal

    assert audit_backlog_note(tmp_settings).startswith("audit journal: 0 calls pending")
    journal = AuditJournal(tmp_settings.dagster_home)
    journal.end("r-1", "warehouse_execute", {}, started_at=1.0, error=None, elapsed_ms=1.0)
    journal.begin("r-2", "snowfakery.run_recipe", {})
    note = audit_backlog_note(tmp_settings)
    assert note.startswith("audit journal: 2 call(s) pending, oldest ") and "next one to start" in note
    journal.done(["r-1", "r-2"])
    assert audit_backlog_note(tmp_settings).startswith("audit journal: 0 calls pending")
