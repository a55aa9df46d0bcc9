"""The audit trail through stops and kills of real gateways (`ade mcp` over stdio and HTTP) on a copy of the
materialized demo: every answered call has exactly one finished run, none is left unfinished, an interrupted call
is recorded as `ade/outcome: unknown` when the next gateway starts, and no Snowfakery process outlives the
gateway. Each test prints its row of the table (answered, recorded, lost, stuck, time to recover)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.config import Settings
from tests.faults import harness

pytestmark = [pytest.mark.slow, pytest.mark.integration]


@pytest.fixture
def home(demo_settings: Settings, tmp_path: Path) -> Iterator[harness.Home]:
    with harness.home_copy(demo_settings.home, tmp_path) as copy:
        yield copy


def _report(tally: harness.Tally) -> None:
    print(f"\n{harness.HEADER}\n{tally.row()}")


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_sigterm_after_answered_reads_loses_none(home: harness.Home, transport: str) -> None:
    tally = harness.sigterm_after_reads(home, transport, n=8)
    _report(tally)
    assert tally.answered == 8 and tally.exit_s is not None  # it exited on its own
    assert tally.lost == 0 and tally.wrong == 0 and tally.stuck == 0 and tally.extra == 0


def test_killed_audit_worker_leaves_nothing_stuck_and_nothing_twice(home: harness.Home) -> None:
    tally = harness.kill_audit_worker(home, n=20)
    _report(tally)
    assert tally.answered == 25 and tally.lost == 0 and tally.stuck == 0 and tally.extra == 0
    assert tally.wrong == 0


def test_kill_9_mid_workspace_call_is_recorded_as_unknown_at_the_next_start(home: harness.Home) -> None:
    tally = harness.kill_gateway_mid_workspace_call(home)
    _report(tally)
    assert tally.recover_s is not None, tally.notes  # recorded without any live call to the new gateway
    assert tally.extra == 1 and tally.stuck == 0  # exactly one run: the interrupted call
    assert "job processes gone after >30" not in " ".join(tally.notes)


def test_sigterm_stops_the_snowfakery_sandbox_with_the_gateway(home: harness.Home) -> None:
    tally = harness.stop_during_snowfakery_run(home)
    _report(tally)
    assert tally.exit_s is not None
    assert tally.recover_s is not None and tally.recover_s < 5, tally.notes  # gone with the gateway


def test_300_reads_then_a_graceful_stop_lose_none(home: harness.Home) -> None:
    tally = harness.many_reads_then_stop(home, n=300)
    _report(tally)
    assert tally.answered == 300 and tally.lost == 0 and tally.stuck == 0 and tally.extra == 0
