"""`ade status` says when a snapshot of a system that changes without ADE seeing it (dbt Cloud, orchestrators, BI)
missed its scheduled refresh (issue 27)."""

from __future__ import annotations

import time

from ade_platform.config import Settings
from ade_platform.ops import REFRESH_GRACE_SECONDS, _last_ticks, _missed_refresh


def test_the_orchestrator_snapshots_are_on_the_schedule_and_dbt_artifacts_are_not(
    tmp_settings: Settings,
) -> None:
    from ade_platform.definitions import build_definitions

    definitions = build_definitions(tmp_settings)
    ticks = {
        k.to_user_string(): t for k, t in _last_ticks(definitions, definitions.resolve_asset_graph()).items()
    }
    assert "orchestrator_runs_dagster" in ticks and "dbt_manifest" not in ticks
    assert time.time() - 3600 <= ticks["orchestrator_runs_dagster"] <= time.time()  # hourly by default


def test_a_missed_tick_makes_the_snapshot_stale() -> None:
    now = time.time()
    tick = now - REFRESH_GRACE_SECONDS - 60
    assert _missed_refresh(tick, tick - 3600, now).startswith("missed its scheduled refresh at ")
    assert _missed_refresh(tick, tick + 5, now) is None  # refreshed at the tick
    assert _missed_refresh(now - 60, now - 3600, now) is None  # the refresh may still be running
    assert _missed_refresh(None, now - 86_400, now) is None  # not on a schedule
