"""A generated profile history of a healthy relation, and anomalies injected into it: what the monitors' false
alarms and detections are measured on (the unit test asserts bounds, the bench prints the figures).

The healthy relation grows with weekly seasonality: +3% on Mondays (the weekend's catch-up), about +2% Tuesday to
Friday, +1% on Saturdays, no load on Sundays; its status mix and its amount's null rate and mean wobble a little
every day. Each day has one profile, at 06:00 UTC and a few minutes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from ade_platform.lib.profiles.model import ColumnProfile, RelationProfile
from ade_platform.lib.profiles.monitors import evaluate

DAY = 86_400.0
MONDAY = 1_763_942_400.0  # 2025-11-24 00:00 UTC, a Monday
GROWTH = {0: 0.03, 1: 0.02, 2: 0.02, 3: 0.02, 4: 0.02, 5: 0.01, 6: 0.0}
RELATION = "bench.main.orders"


def _profile(
    moment: float, rows: int, rng: random.Random, shares: tuple[float, float, float]
) -> RelationProfile:
    null_rate = max(0.0, 0.02 + rng.gauss(0, 0.002))
    nulls = round(rows * null_rate)
    mean = 50 * (1 + rng.gauss(0, 0.01))
    placed = round(rows * shares[0])
    shipped = round(rows * shares[1])
    status = ColumnProfile(
        "status", "VARCHAR", 0, 3, None, None, None,
        (("placed", placed), ("shipped", shipped), ("returned", rows - placed - shipped)), False,
    )  # fmt: skip
    amount = ColumnProfile("amount", "DOUBLE", nulls, 900, 1.0, 400.0, mean * (rows - nulls), None, False)
    order_id = ColumnProfile("order_id", "BIGINT", 0, rows, 1, rows, None, None, False)
    columns = {"order_id": order_id, "status": status, "amount": amount}
    return RelationProfile("bench", RELATION, rows, columns, {"order_id": 0}, moment, 5.0)


def healthy_history(days: int = 70, seed: int = 33) -> list[RelationProfile]:
    rng = random.Random(seed)
    rows = 10_000
    history = []
    for d in range(days):
        moment = MONDAY + d * DAY + 6 * 3600 + rng.uniform(0, 600)
        growth = GROWTH[d % 7]
        if growth:
            rows = round(rows * (1 + growth + rng.gauss(0, 0.002)))
        shares = (0.6 + rng.gauss(0, 0.003), 0.3 + rng.gauss(0, 0.003), 0.0)
        history.append(_profile(moment, rows, rng, shares))
    return history


def _rows(p: RelationProfile, rows: int) -> RelationProfile:
    scale = rows / p.row_count
    columns = dict(p.columns)
    status = columns["status"]
    top = tuple((v, round(n * scale)) for v, n in status.top or ())
    columns["status"] = replace(status, top=top)
    amount = columns["amount"]
    columns["amount"] = replace(amount, nulls=round(amount.nulls * scale), sum=(amount.sum or 0) * scale)
    return replace(p, row_count=rows, columns=columns)


def _nulls(p: RelationProfile) -> RelationProfile:
    amount = p.columns["amount"]
    return replace(
        p, columns={**p.columns, "amount": replace(amount, nulls=amount.nulls + p.row_count // 15)}
    )


def _vanished(p: RelationProfile) -> RelationProfile:
    status = p.columns["status"]
    top = dict(status.top or ())
    top["placed"] += top.pop("returned")
    return replace(p, columns={**p.columns, "status": replace(status, top=tuple(top.items()))})


def _dupes(p: RelationProfile) -> RelationProfile:
    return replace(p, duplicates={"order_id": 25})


Anomaly = Callable[[list[RelationProfile], int], RelationProfile]
ANOMALIES: dict[str, Anomaly] = {
    "volume_drop_30pct": lambda h, d: _rows(h[d], round(h[d - 1].row_count * 0.7)),
    "volume_spike_double_load": lambda h, d: _rows(h[d], h[d].row_count + h[d - 1].row_count // 2),
    "weekday_load_missing": lambda h, d: _rows(h[d], h[d - 1].row_count),
    "nulls_plus_7_points": lambda h, d: _nulls(h[d]),
    "category_vanished": lambda h, d: _vanished(h[d]),
    "new_duplicates": lambda h, d: _dupes(h[d]),
}


@dataclass(frozen=True)
class Rates:
    judged_days: int
    false_alarm_days: int
    false_alarms_by_monitor: dict[str, int]
    injected: int
    detected: int
    detected_by_kind: dict[str, tuple[int, int]]

    @property
    def false_alarm_rate(self) -> float:
        return self.false_alarm_days / self.judged_days if self.judged_days else 0.0

    @property
    def detection_rate(self) -> float:
        return self.detected / self.injected if self.injected else 0.0


def measure(history: list[RelationProfile], *, first: int = 35) -> Rates:
    """Judge every day from `first` on with only the days before it as history: healthy days (false alarms), then
    each anomaly injected into each weekday (Tuesday to Friday, where a missing load is not normal) of those days
    (detections)."""
    judged = alarms = 0
    by_monitor: dict[str, int] = {}
    for d in range(first, len(history)):
        failed = [r.monitor for r in evaluate(history[:d], history[d]) if not r.passed]
        judged += 1
        alarms += bool(failed)
        for m in failed:
            by_monitor[m] = by_monitor.get(m, 0) + 1
    detected_by: dict[str, tuple[int, int]] = {}
    for kind, inject in ANOMALIES.items():
        hit = total = 0
        for d in range(first, len(history)):
            if d % 7 not in (1, 2, 3, 4):
                continue
            total += 1
            hit += any(not r.passed for r in evaluate(history[:d], inject(history, d)))
        detected_by[kind] = (hit, total)
    injected = sum(t for _, t in detected_by.values())
    detected = sum(h for h, _ in detected_by.values())
    return Rates(judged, alarms, by_monitor, injected, detected, detected_by)
