"""What changed in a relation's values between two profiles, significant changes only.

Every `ValueChange` says its change with numbers in one phrase and carries a `magnitude` that reads the same
across kinds: roughly the fraction of the relation's rows the change touches (rows gone or added over the rows
before, a value's share moved, null rate moved, new duplicate rows over rows; for a range or distinct change the
relative move, capped at 1). Ordinary growth (a few % more rows, the same mix, the same null rates) is nothing.

With no thresholds the fixed defaults of `Thresholds()` apply; `monitors.learn_thresholds` gives per-relation
ones learned from the profile history, which make the same decisions here and in the Dagster checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ade_platform.lib.profiles.model import DEFAULT_THRESHOLDS, ColumnProfile, RelationProfile, Thresholds

KINDS = ("row_count", "value_mix", "nulls", "duplicates", "range", "distinct")
MAX_VALUES_NAMED = 3  # values a mix change names in its phrase (all are in `values`)


@dataclass(frozen=True)
class ValueChange:
    relation: str
    column: str | None
    kind: str  # one of KINDS
    before: Any
    after: Any
    detail: str
    magnitude: float
    values: tuple[str, ...] = ()  # the mix values that appeared, vanished or moved


def _n(value: float) -> str:
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4g}"


def _pct(fraction: float) -> str:
    points = fraction * 100
    return f"{points:.0f}%" if abs(points) >= 10 or points == 0 else f"{points:.1f}%"


def _signed_pct(fraction: float) -> str:
    text = _pct(abs(fraction))
    return ("+" if fraction >= 0 else "\u2212") + text


def _rows(before: RelationProfile, after: RelationProfile, t: Thresholds) -> ValueChange | None:
    b, a = before.row_count, after.row_count
    if b == a == 0:
        return None
    rel = (a - b) / b if b else 1.0
    vanished = b > 0 and a == 0
    outside = rel < t.rows_low or rel > t.rows_high
    expected = b * (1 + (t.rows_low + t.rows_high) / 2)  # the middle of the band: 0% by default
    if not vanished and not (outside and abs(a - expected) >= t.min_row_delta):
        return None
    detail = f"rows {_n(b)} \u2192 {_n(a)}" + (f" ({_signed_pct(rel)})" if b else "")
    if t.learned_from:
        detail += f", expected {_signed_pct(t.rows_low)} to {_signed_pct(t.rows_high)}"
    moved = abs(a - expected) / b if b else 1.0
    return ValueChange(after.relation, None, "row_count", b, a, detail, round(min(moved, 1.0), 6))


def _shares(col: ColumnProfile, rows: int) -> dict[str, float]:
    return {v: n / rows for v, n in (col.top or ())} if rows else {}


def _mix(
    relation: str, b: ColumnProfile, a: ColumnProfile, rows_b: int, rows_a: int, t: Thresholds
) -> ValueChange | None:
    if b.top is None or a.top is None or not rows_b or not rows_a:
        return None
    counts_b, counts_a = dict(b.top), dict(a.top)
    share_b, share_a = _shares(b, rows_b), _shares(a, rows_a)
    moved: list[tuple[float, str, str]] = []  # (share moved, value, phrase)
    for value in sorted(set(counts_b) | set(counts_a)):
        nb, na = counts_b.get(value, 0), counts_a.get(value, 0)
        delta = share_a.get(value, 0.0) - share_b.get(value, 0.0)
        appeared_or_gone = (nb == 0) != (na == 0) and max(nb, na) >= t.mix_min_rows
        if appeared_or_gone or abs(delta) * 100 > t.mix_points:
            phrase = f"`{value}` {_n(nb)} \u2192 {_n(na)} rows"
            if not appeared_or_gone:
                phrase += f" ({_pct(share_b.get(value, 0.0))} \u2192 {_pct(share_a.get(value, 0.0))})"
            moved.append((abs(delta), value, phrase))
    if not moved:
        return None
    # When values appeared or vanished, the others' shares moved because of them: name the cause only.
    primary = [m for m in moved if (counts_b.get(m[1], 0) == 0) != (counts_a.get(m[1], 0) == 0)]
    moved = primary or moved
    moved.sort(key=lambda m: (-m[0], m[1]))
    # total variation distance between the two mixes: the share of rows whose value changed
    keys = set(share_b) | set(share_a)
    tvd = sum(abs(share_a.get(k, 0.0) - share_b.get(k, 0.0)) for k in keys) / 2
    named = [m[2] for m in moved[:MAX_VALUES_NAMED]]
    more = f" (and {len(moved) - MAX_VALUES_NAMED} more)" if len(moved) > MAX_VALUES_NAMED else ""
    return ValueChange(
        relation,
        a.name,
        "value_mix",
        [list(v) for v in b.top],
        [list(v) for v in a.top],
        f"`{a.name}`: " + "; ".join(named) + more,
        round(min(max(tvd, 1e-6), 1.0), 6),
        tuple(m[1] for m in moved),
    )


def _nulls(
    relation: str, b: ColumnProfile, a: ColumnProfile, rows_b: int, rows_a: int, t: Thresholds
) -> ValueChange | None:
    if not rows_b or not rows_a:
        return None
    rb, ra = b.nulls / rows_b, a.nulls / rows_a
    if abs(ra - rb) * 100 <= t.nulls_for(a.name):
        return None
    detail = f"`{a.name}`: nulls {_pct(rb)} \u2192 {_pct(ra)}"
    return ValueChange(relation, a.name, "nulls", round(rb, 6), round(ra, 6), detail, round(abs(ra - rb), 6))


def _mean(col: ColumnProfile, rows: int) -> float | None:
    present = rows - col.nulls
    return col.sum / present if col.sum is not None and present > 0 else None


def _identifier_like(col: ColumnProfile, rows: int) -> bool:
    """Nearly one value per row (an id, a sequence): its mean follows the rows, not the data's meaning."""
    present = rows - col.nulls
    return col.distinct is not None and present > 0 and col.distinct >= 0.9 * present


def _range(
    relation: str, b: ColumnProfile, a: ColumnProfile, rows_b: int, rows_a: int, t: Thresholds
) -> ValueChange | None:
    mb, ma = _mean(b, rows_b), _mean(a, rows_a)
    if mb is None or ma is None or _identifier_like(b, rows_b) or _identifier_like(a, rows_a):
        return None
    scale = abs(mb) if mb else max(abs(ma), 1e-12)
    rel = (ma - mb) / scale
    sign_flip = isinstance(b.min, int | float) and isinstance(a.min, int | float) and b.min >= 0 > a.min
    if abs(rel) <= t.mean_rel and not sign_flip:
        return None
    detail = f"`{a.name}`: mean {_n(round(mb, 4))} \u2192 {_n(round(ma, 4))}"
    if sign_flip:
        detail += f", min {_n(b.min)} \u2192 {_n(a.min)}"
    before = {"min": b.min, "max": b.max, "sum": b.sum}
    after = {"min": a.min, "max": a.max, "sum": a.sum}
    return ValueChange(relation, a.name, "range", before, after, detail, round(min(abs(rel), 1.0), 6))


def _distinct(
    relation: str, b: ColumnProfile, a: ColumnProfile, rows_b: int, rows_a: int, t: Thresholds
) -> ValueChange | None:
    """A high-cardinality column whose distinct count moved far more (or less) than its rows did: a key remapped
    to one value, or a join that fans out. Low-cardinality columns are covered by their mix."""
    if b.distinct is None or a.distinct is None or b.distinct < 2 or not rows_b or not rows_a:
        return None
    if b.top is not None and a.top is not None:
        return None
    expected = rows_a / rows_b
    ratio = a.distinct / b.distinct
    if expected / t.distinct_factor <= ratio <= expected * t.distinct_factor:
        return None
    detail = f"`{a.name}`: distinct {_n(b.distinct)} \u2192 {_n(a.distinct)}"
    magnitude = min(abs(ratio - expected) / max(expected, 1e-9), 1.0)
    return ValueChange(relation, a.name, "distinct", b.distinct, a.distinct, detail, round(magnitude, 6))


def _duplicates(before: RelationProfile, after: RelationProfile, t: Thresholds) -> list[ValueChange]:
    found = []
    for key, now in after.duplicates.items():
        was = before.duplicates.get(key)
        if was is None or now - was <= t.new_duplicates:
            continue
        column = key if "," not in key else None
        label = f"`{key}`" if column else f"({key})"
        detail = f"{label}: duplicate rows {_n(was)} \u2192 {_n(now)}"
        magnitude = min((now - was) / max(after.row_count, 1), 1.0)
        found.append(ValueChange(after.relation, column, "duplicates", was, now, detail, round(magnitude, 6)))
    return found


def compare(
    before: RelationProfile, after: RelationProfile, *, thresholds: Thresholds | None = None
) -> list[ValueChange]:
    """The significant changes from `before` to `after` (two profiles of the same relation), largest first."""
    t = thresholds or DEFAULT_THRESHOLDS
    changes: list[ValueChange] = []
    rows = _rows(before, after, t)
    if rows is not None:
        changes.append(rows)
    changes += _duplicates(before, after, t)
    for name, col_a in after.columns.items():
        col_b = before.columns.get(name)
        if col_b is None:
            continue  # a new column is a schema change, said by the schema snapshots
        args = (after.relation, col_b, col_a, before.row_count, after.row_count, t)
        for check in (_mix, _nulls, _range, _distinct):
            found = check(*args)
            if found is not None:
                changes.append(found)
    changes.sort(key=lambda c: (-c.magnitude, KINDS.index(c.kind), c.column or ""))
    return changes
