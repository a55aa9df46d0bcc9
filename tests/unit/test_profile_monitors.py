"""Monitors on profile history: learned thresholds keep healthy days quiet and catch injected anomalies."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ade_platform.lib.profiles import compare
from ade_platform.lib.profiles.monitors import MONITORS, evaluate, learn_thresholds, weekday
from benchmarks.profiles.history import ANOMALIES, DAY, healthy_history, measure


@pytest.mark.parametrize("seed", [33, 1, 2])
def test_healthy_history_is_quiet_and_anomalies_are_caught(seed: int) -> None:
    rates = measure(healthy_history(seed=seed))
    assert rates.judged_days == 35 and rates.injected == 20 * len(ANOMALIES)
    assert rates.false_alarm_rate <= 0.03, rates.false_alarms_by_monitor
    assert rates.detection_rate >= 0.9, rates.detected_by_kind
    assert all(hit / total >= 0.75 for hit, total in rates.detected_by_kind.values()), rates.detected_by_kind


def test_little_history_falls_back_to_the_fixed_defaults() -> None:
    history = healthy_history(days=6)
    assert learn_thresholds(history).learned_from == 0
    results = evaluate(history[:-1], history[-1])
    assert [r.monitor for r in results] == ["volume", "null_rate", "duplicates", "value_mix", "freshness"]
    assert set(MONITORS) == {r.monitor for r in results} and all(r.passed for r in results)


def test_a_missing_weekday_load_is_caught_only_with_learned_seasonal_bands() -> None:
    history = healthy_history()
    tuesday = next(d for d in range(50, 70) if weekday(history[d].profiled_at) == 1)
    stalled = replace(history[tuesday], row_count=history[tuesday - 1].row_count)
    assert compare(history[tuesday - 1], stalled) == []  # the fixed +-10% band sees nothing
    learned = learn_thresholds(history[:tuesday], on_weekday=1)
    assert learned.learned_from == tuesday and learned.rows_low > 0.005
    volume = next(r for r in evaluate(history[:tuesday], stalled) if r.monitor == "volume")
    assert not volume.passed and "expected +" in volume.detail
    # A Sunday with no load is what Sundays look like.
    sunday = next(d for d in range(50, 70) if weekday(history[d].profiled_at) == 6)
    assert history[sunday].row_count == history[sunday - 1].row_count
    assert all(r.passed for r in evaluate(history[:sunday], history[sunday]))


def test_a_relation_that_stops_changing_is_late_for_its_cadence() -> None:
    history = healthy_history()
    wednesday = next(d for d in range(50, 70) if weekday(history[d].profiled_at) == 2)
    now = history[wednesday].profiled_at
    on_time = next(
        r for r in evaluate(history[:wednesday], history[wednesday], now=now) if r.monitor == "freshness"
    )
    assert on_time.passed
    late = next(
        r
        for r in evaluate(history[:wednesday], history[wednesday], now=now + 2 * DAY)
        if r.monitor == "freshness"
    )
    assert not late.passed and late.metadata["allowed_hours"] < 47 < late.metadata["hours_since_change"]
