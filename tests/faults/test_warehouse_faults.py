"""A locked and a missing warehouse made real (issue 38 §5): a real `ade mcp` gateway (stdio) on a copy of the
materialized demo home, while another process holds the demo DuckDB file open for writing, and while the file is
moved away. What an operator is promised: cached tools keep answering from the store; live tools answer with a
structured error with a stable code (no traceback, no path) instead of hanging; every answered live call has
exactly one finished audit run after a graceful stop (counted as the harness does: what the stop left in the
journal is recorded by the next gateway's start), none is left unfinished; the gateway creates no empty database
in the missing file's place; and the next live call succeeds once the writer lets go / the file is back.

Each test prints its row of the fault table (answered, recorded, lost, stuck, time to recover).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ade_platform.config import Settings
from tests.faults import harness

# No timed assertion: a hang is caught by the test's timeout, generous for a busy machine.
pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.timeout(900)]

CACHED = ("warehouse_get_schema", {"schema_name": "main"})  # a whole schema: from the schema snapshot
# One table: read live, falling back to the snapshot (stale, with the live error's code).
FALLBACK = ("warehouse_get_schema", {"schema_name": "main", "table_name": "customers"})
LIVE = [
    ("warehouse_execute", {"sql": harness.READ_SQL}),
    ("warehouse_explain_query", {"sql": "select * from customers"}),
]
AUDITED = sorted({tool for tool, _ in [*LIVE, FALLBACK]})
# Codes a live read may give when the warehouse cannot be read now (what the warehouse toolset falls back on).
UNAVAILABLE = {"connection_failed", "warehouse_unavailable"}
ROUNDS = 3

# Holds the warehouse file the way another writer would (a dbt run, an operator's duckdb shell): an ordinary
# read-write connection, which takes DuckDB's exclusive file lock until it is closed. The gateway may hold the
# file read-only for a moment after a call (hold_seconds), so the lock is retried until it is had.
_LOCKER = textwrap.dedent(
    """
    import sys, time
    import duckdb

    deadline = time.monotonic() + 120
    while True:
        try:
            con = duckdb.connect(sys.argv[1])
            break
        except duckdb.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    print("locked", flush=True)
    sys.stdin.read()  # held until the test closes our stdin
    con.close()
    print("released", flush=True)
    """
)


@pytest.fixture
def home(demo_settings: Settings, tmp_path: Path) -> Iterator[harness.Home]:
    with harness.home_copy(demo_settings.home, tmp_path) as copy:
        yield copy


def _warehouse_file(home: harness.Home) -> Path:
    path = home.path / "warehouse" / "demo.duckdb"
    assert path.is_file(), "the demo home has no warehouse file"
    return path


class _Calls:
    """The calls made to one gateway and what they answered."""

    def __init__(self, gateway: harness.Stdio, home: harness.Home):
        self.gateway = gateway
        self.home = home
        self.live_answered: dict[str, int] = {tool: 0 for tool in AUDITED}
        self.succeeded: dict[str, list[str]] = {tool: [] for tool in AUDITED}
        self.codes: list[str] = []
        self.cached: list[dict[str, Any]] = []
        self.fallbacks: list[dict[str, Any]] = []

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """(ok, structured content or the error object) of one call; every answer is a structured one."""
        message = self.gateway.reply(self.gateway.send_call(tool, arguments))
        result = message.get("result")
        assert result is not None, f"{tool}: not a tool result: {message}"
        if result.get("isError"):
            text = "".join(c.get("text", "") for c in result.get("content") or [])
            assert "Traceback" not in text and str(self.home.path) not in text, text
            error = json.loads(text)
            assert isinstance(error.get("error"), str) and error["error"] != "internal_error", error
            return False, error
        return True, result.get("structuredContent") or {}

    def live(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        ok, body = self.call(tool, arguments)
        self.live_answered[tool] += 1
        if ok:
            self.succeeded[tool].append(body["provenance"]["run_id"])
        else:
            self.codes.append(body["error"])
        return ok, body

    def during_fault(self) -> None:
        """Cached, fallback and live calls while the warehouse cannot be read."""
        for _ in range(ROUNDS):
            ok, body = self.call(*CACHED)
            assert ok and body["tables"], body
            self.cached.append(body["provenance"])
            ok, body = self.call(*FALLBACK)
            assert ok, body  # the table comes from the snapshot ...
            self.live_answered[FALLBACK[0]] += 1  # ... after a live read that failed (a failed run)
            assert body["provenance"]["stale"] is True and body["provenance"]["live_error"] in UNAVAILABLE, (
                body
            )
            self.fallbacks.append(body["provenance"])
            for tool, arguments in LIVE:
                ok, body = self.live(tool, arguments)
                assert not ok and body["error"] in UNAVAILABLE, body

    def recover(self, limit: int = 40) -> tuple[float | None, int]:
        """Seconds from now until a live call succeeds again (None: not within `limit` calls), calls it took."""
        started = time.monotonic()
        for attempt in range(1, limit + 1):
            ok, _ = self.live(*LIVE[0])
            if ok:
                return time.monotonic() - started, attempt
            time.sleep(0.25)
        return None, limit


def _tally(home: harness.Home, fault: str, calls: _Calls, exit_s: float | None) -> harness.Tally:
    """Every audited tool's runs against the live calls answered: recorded (finished), lost, stuck, extra."""
    t = harness.Tally(fault, exit_s=exit_s)
    for tool in AUDITED:
        runs = home.runs(tool)
        done = {r.run_id: r for r in runs if r.status.value not in harness._LIVE}
        answered = calls.live_answered[tool]
        t.answered += answered
        t.recorded += min(len(done), answered)
        t.stuck += len(runs) - len(done)
        # a successful answer names its run; a failed call's run is counted against the tool's answers
        unrecorded = sum(1 for i in calls.succeeded[tool] if i not in done)
        t.lost += max(unrecorded, answered - len(done), 0)
        t.wrong += sum(1 for i in calls.succeeded[tool] if i in done and done[i].status.value != "SUCCESS")
        t.extra += max(0, len(runs) - answered)
    return t


def _settle(home: harness.Home, t: harness.Tally, calls: _Calls, timeout: float = 300) -> harness.Tally:
    """The harness's count: a graceful stop that left audits in the journal (lost or stuck at exit) is followed by
    the next gateway's start, which records them; the tally is then taken again, and the time it took noted."""
    if not (t.lost or t.stuck):
        return t
    t.notes.append(f"at exit: lost {t.lost}, stuck {t.stuck}")
    nxt = harness.Stdio(home)  # starts, and is asked nothing
    started = time.monotonic()
    try:
        while time.monotonic() - started < timeout:
            again = _tally(home, t.fault, calls, t.exit_s)
            if not (again.lost or again.stuck):
                t.notes.append(f"recorded {time.monotonic() - started:.1f} s after the next start")
                break
            time.sleep(0.25)
    finally:
        harness.stop(nxt.proc, signal.SIGTERM)
    again = _tally(home, t.fault, calls, t.exit_s)
    again.notes = t.notes
    return again


def _report(capsys: pytest.CaptureFixture[str], tally: harness.Tally, calls: _Calls) -> None:
    with capsys.disabled():
        print(f"\n{harness.HEADER}\n{tally.row()}")
        print(f"    error codes of live calls during the fault: {sorted(set(calls.codes))}")
        print(f"    cached answers during the fault flagged stale: {sum(p['stale'] for p in calls.cached)}"
              f"/{len(calls.cached)}")  # fmt: skip


def _assert_audited(tally: harness.Tally) -> None:
    assert tally.exit_s is not None  # the gateway stopped on SIGTERM by itself
    assert tally.answered > 0
    assert tally.recorded == tally.answered and tally.lost == 0 and tally.extra == 0, tally
    assert tally.stuck == 0 and tally.wrong == 0, tally


def test_locked_warehouse(home: harness.Home, capsys: pytest.CaptureFixture[str]) -> None:
    path = _warehouse_file(home)
    gateway = harness.Stdio(home)
    calls = _Calls(gateway, home)
    locker: subprocess.Popen[bytes] | None = None
    try:
        assert calls.live(*LIVE[0])[0], "the warehouse could not be read before the fault"
        locker = subprocess.Popen(
            [sys.executable, "-c", _LOCKER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=harness.REPO_ROOT,
        )
        assert locker.stdout is not None and locker.stdin is not None
        assert locker.stdout.readline().strip() == b"locked", locker.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
        calls.during_fault()
        locker.stdin.close()  # the writer finishes
        assert locker.stdout.readline().strip() == b"released"
        locker.wait(60)
        recover_s, attempts = calls.recover()
    finally:
        if locker is not None and locker.poll() is None:
            locker.kill()
            locker.wait()
        exit_s = harness.stop(gateway.proc, signal.SIGTERM)  # graceful: what a service manager sends
    tally = _settle(home, _tally(home, "locked warehouse (stdio)", calls, exit_s), calls)
    tally.recover_s = recover_s
    tally.notes.append(f"recovered at live call {attempts} after release")
    _report(capsys, tally, calls)
    assert recover_s is not None, "no live call succeeded after the writer let go"
    _assert_audited(tally)


def test_missing_warehouse(home: harness.Home, capsys: pytest.CaptureFixture[str]) -> None:
    path = _warehouse_file(home)
    moved = path.with_name(path.name + ".moved-away")
    gateway = harness.Stdio(home)
    calls = _Calls(gateway, home)
    try:
        assert calls.live(*LIVE[0])[0], "the warehouse could not be read before the fault"
        path.rename(moved)
        calls.during_fault()
        # DuckDB creates a database file where it is asked to open one: the gateway must not, or the agent's
        # next calls would read an empty warehouse as if it were the real one
        created = [p.name for p in (path, path.with_name(path.name + ".wal")) if p.exists()]
        assert created == [], f"the gateway created {created} in the missing warehouse's place"
        moved.rename(path)
        recover_s, attempts = calls.recover()
    finally:
        if moved.exists() and not path.exists():
            moved.rename(path)
        exit_s = harness.stop(gateway.proc, signal.SIGTERM)
    tally = _settle(home, _tally(home, "missing warehouse (stdio)", calls, exit_s), calls)
    tally.recover_s = recover_s
    tally.notes.append(f"recovered at live call {attempts} after the file was back")
    _report(capsys, tally, calls)
    assert recover_s is not None, "no live call succeeded once the file was back"
    _assert_audited(tally)
