"""Monitors on a relation's profile history: volume, freshness cadence, null rate, duplicates, value mix, with thresholds
learned from the history itself (issue 33, item 4).

Learning works on day-over-day steps: the newest profile of each UTC day, compared with the day before. A bound
is the median of the past steps plus or minus `K` robust deviations (1.4826 x the median absolute deviation),
never narrower than a floor (so a perfectly regular history does not alarm on the first wobble). With at least
`SEASONAL_DAYS` of days, only the steps that ended on the same weekday as the one judged are used (when there are
at least `MIN_SEASONAL_STEPS`) to learn the volume band: a Sunday with no load is normal for Sundays, not
for Tuesdays. With fewer than
`MIN_DAYS` days of history the fixed defaults of `Thresholds()` apply.

The learned `Thresholds` are the ones `compare()` takes, so the Dagster checks and an explanation flag the same
changes. The freshness cadence is learned from the gaps between changes of the row count: the relation is late
when the time since its last change passes what its history allows after a change on that weekday.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ade_platform.lib.profiles.compare import ValueChange, compare
from ade_platform.lib.profiles.model import RelationProfile, Thresholds

K = 4.0
MIN_DAYS = 8  # seven day-over-day steps
SEASONAL_DAYS = 21  # three weeks: each weekday seen three times
MIN_SEASONAL_STEPS = 3
ROW_FLOOR = 0.01  # a learned volume band is at least +-1% wide around its median
NULL_FLOOR = 0.5  # points
MIX_FLOOR, MIX_CEILING = 1.0, 10.0  # points
MEAN_FLOOR, MEAN_CEILING = 0.05, 1.0
GAP_FLOOR = 3600.0  # seconds of slack on the freshness cadence
_DAY = 86_400.0
MONITORS = ("volume", "freshness", "null_rate", "duplicates", "value_mix")


def _day(p: RelationProfile) -> int:
    return int(p.profiled_at // _DAY)


def weekday(moment: float) -> int:
    """0 = Monday (1970-01-01 was a Thursday)."""
    return (int(moment // _DAY) + 3) % 7


def daily(history: Sequence[RelationProfile]) -> list[RelationProfile]:
    """The newest profile of each UTC day, oldest first."""
    last: dict[int, RelationProfile] = {}
    for p in history:
        if _day(p) not in last or last[_day(p)].profiled_at <= p.profiled_at:
            last[_day(p)] = p
    return [last[d] for d in sorted(last)]


def _spread(values: Sequence[float]) -> tuple[float, float]:
    """(median, robust standard deviation)."""
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values)
    return med, 1.4826 * mad


def _steps(
    days: list[RelationProfile], on_weekday: int | None
) -> list[tuple[RelationProfile, RelationProfile]]:
    steps = [(a, b) for a, b in itertools.pairwise(days) if _day(b) - _day(a) == 1]
    if on_weekday is not None and len(days) >= SEASONAL_DAYS:
        same = [(a, b) for a, b in steps if weekday(b.profiled_at) == on_weekday]
        if len(same) >= MIN_SEASONAL_STEPS:
            return same
    return steps


def _rate(p: RelationProfile, column: str) -> float | None:
    col = p.columns.get(column)
    return None if col is None or not p.row_count else col.nulls / p.row_count


def _mean(p: RelationProfile, column: str) -> float | None:
    col = p.columns.get(column)
    present = p.row_count - col.nulls if col is not None else 0
    return col.sum / present if col is not None and col.sum is not None and present > 0 else None


def _share_moves(a: RelationProfile, b: RelationProfile) -> list[float]:
    """Every mix value's share move from a to b, signed, in points."""
    moves = []
    for name, col in b.columns.items():
        before = a.columns.get(name)
        if col.top is None or before is None or before.top is None or not a.row_count or not b.row_count:
            continue
        old, new = dict(before.top), dict(col.top)
        moves += [
            (new.get(v, 0) / b.row_count - old.get(v, 0) / a.row_count) * 100 for v in set(old) | set(new)
        ]
    return moves


def _clamp(value: float, low: float, high: float) -> float:
    return max(low, min(high, value))


def learn_thresholds(history: Sequence[RelationProfile], *, on_weekday: int | None = None) -> Thresholds:
    """Thresholds for one relation from its history (oldest first); `on_weekday` (0 = Monday) picks the
    seasonal steps. Fewer than MIN_DAYS days: the fixed defaults."""
    days = daily(history)
    steps = _steps(days, None)
    if len(days) < MIN_DAYS or len(steps) < MIN_DAYS - 1:
        return Thresholds()
    # Volume follows the week (loads skip weekends); the shape of the values does not, and three same-weekday
    # steps are too few to learn a null rate's or a mix's wobble from: those use every step.
    growth = [b.row_count / a.row_count - 1 for a, b in _steps(days, on_weekday) if a.row_count]
    med, sigma = _spread(growth) if growth else (0.0, 0.0)
    width = max(K * sigma, ROW_FLOOR)
    nulls: dict[str, float] = {}
    for column in days[-1].columns:
        moves = [
            (rb - ra) * 100
            for a, b in steps
            if (ra := _rate(a, column)) is not None and (rb := _rate(b, column)) is not None
        ]
        if moves:
            m, s = _spread(moves)
            nulls[column] = max(abs(m) + K * s, NULL_FLOOR)
    dup_moves = [
        b.duplicates[k] - a.duplicates[k] for a, b in steps for k in b.duplicates if k in a.duplicates
    ]
    dup_med, dup_sigma = _spread(dup_moves) if dup_moves else (0.0, 0.0)
    shares = [m for a, b in steps for m in _share_moves(a, b)]
    means = [
        abs(mb / ma - 1)
        for a, b in steps
        for c in days[-1].columns
        if (ma := _mean(a, c)) and (mb := _mean(b, c)) is not None
    ]
    mix = _clamp(abs(_spread(shares)[0]) + K * _spread(shares)[1], MIX_FLOOR, MIX_CEILING) if shares else 3.0
    mean = (
        _clamp(statistics.median(means) + K * _spread(means)[1], MEAN_FLOOR, MEAN_CEILING) if means else 0.25
    )
    return Thresholds(
        rows_low=med - width,
        rows_high=med + width,
        min_row_delta=1,
        null_points_by_column=nulls,
        mix_points=mix,
        new_duplicates=max(0, math.ceil(dup_med + K * dup_sigma)),
        mean_rel=mean,
        learned_from=len(days),
    )


def expected_gap(history: Sequence[RelationProfile], *, on_weekday: int | None = None) -> float | None:
    """Seconds the relation may go without its row count changing after a change (on `on_weekday`, with enough
    history), or None when its history shows fewer than MIN_DAYS changes."""
    changes = [b.profiled_at for a, b in itertools.pairwise(history) if b.row_count != a.row_count]
    gaps = [(start, end - start) for start, end in itertools.pairwise(changes)]
    if len(gaps) < MIN_DAYS - 1:
        return None
    if on_weekday is not None and (changes[-1] - changes[0]) >= SEASONAL_DAYS * _DAY:
        same = [g for start, g in gaps if weekday(start) == on_weekday]
        if len(same) >= MIN_SEASONAL_STEPS:
            gaps = [(0.0, g) for g in same]
    values = [g for _, g in gaps]
    med, sigma = _spread(values)
    return max(med + K * sigma, med * 1.25, med + GAP_FLOOR)


@dataclass(frozen=True)
class MonitorResult:
    monitor: str  # one of MONITORS
    relation: str
    passed: bool
    detail: str
    metadata: dict[str, Any] = field(default_factory=dict)
    changes: tuple[ValueChange, ...] = ()


def baseline(history: Sequence[RelationProfile], current: RelationProfile) -> RelationProfile | None:
    """What `current` is judged against: the newest profile at least a day older (the same time yesterday, as
    the learned day-over-day steps are), else the oldest one there is."""
    older = [p for p in history if p.profiled_at <= current.profiled_at - _DAY + GAP_FLOOR]
    if older:
        return older[-1]
    earlier = [p for p in history if p.profiled_at < current.profiled_at]
    return earlier[0] if earlier else None


def evaluate(
    history: Sequence[RelationProfile], current: RelationProfile, *, now: float | None = None
) -> list[MonitorResult]:
    """The monitors (MONITORS) for one relation: `history` is what came before `current` (oldest first)."""
    past = [p for p in history if p.profiled_at < current.profiled_at]
    day = weekday(current.profiled_at)
    thresholds = learn_thresholds(past, on_weekday=day)
    learned = {"learned_from_days": thresholds.learned_from}
    before = baseline(past, current)
    changes = compare(before, current, thresholds=thresholds) if before is not None else []
    results = []
    for monitor, kinds in (
        ("volume", {"row_count"}),
        ("null_rate", {"nulls"}),
        ("duplicates", {"duplicates"}),
        ("value_mix", {"value_mix"}),
    ):
        hits = tuple(c for c in changes if c.kind in kinds)
        meta = dict(learned)
        if monitor == "volume":
            meta.update(
                rows=current.row_count, band=[round(thresholds.rows_low, 4), round(thresholds.rows_high, 4)]
            )
        detail = "; ".join(c.detail for c in hits) or (
            "no baseline yet" if before is None else "within bounds"
        )
        results.append(MonitorResult(monitor, current.relation, not hits, detail, meta, hits))
    results.append(_freshness([*past, current], current, now, day))
    return results


def _freshness(
    history: Sequence[RelationProfile], current: RelationProfile, now: float | None, day: int
) -> MonitorResult:
    moment = current.profiled_at if now is None else now
    last_change = next(
        (
            b.profiled_at
            for a, b in zip(history[-2::-1], history[::-1], strict=False)
            if a.row_count != b.row_count
        ),
        None,
    )
    if last_change is None:
        return MonitorResult(
            "freshness", current.relation, True, "no change of the row count in the history yet"
        )
    allowed = expected_gap(
        [p for p in history if p.profiled_at <= last_change], on_weekday=weekday(last_change)
    )
    quiet = moment - last_change
    meta = {"hours_since_change": round(quiet / 3600, 2)}
    if allowed is None:
        return MonitorResult(
            "freshness", current.relation, True, "not enough changes to learn a cadence", meta
        )
    meta["allowed_hours"] = round(allowed / 3600, 2)
    late = quiet > allowed
    detail = (
        f"rows unchanged for {quiet / 3600:.1f} h (its cadence allows {allowed / 3600:.1f} h)"
        if late
        else "within its cadence"
    )
    return MonitorResult("freshness", current.relation, not late, detail, meta)
