"""What a profile of a relation holds: counts and aggregates, never a row.

A `RelationProfile` is what one bounded query (plus at most one small grouped query) says about a relation at one
moment: its row count, per column the nulls, distinct count, min / max / sum (numerics and dates), the value mix
of low-cardinality columns, and the duplicates on the keys dbt declares unique. A protected column (personal data,
or an excluded table) has counts only: its min, max, sum and mix are None, never queried.

`as_state` is the JSON-safe form kept in the store; `from_state` reads it back (unknown keys ignored, so a newer
writer's profile still reads). Values are kept as JSON scalars: numbers stay numbers, dates and times become ISO
text (which sorts as they do), anything else its text, cut to `MAX_VALUE_CHARS`.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

MAX_VALUE_CHARS = 200  # a value of a mix or a min/max kept as text is cut here: a profile stays small


def json_value(value: Any) -> Any:
    """A warehouse value as a JSON scalar (numbers as numbers, temporal values as ISO text)."""
    if value is None or isinstance(value, bool | int | str):
        return value[:MAX_VALUE_CHARS] if isinstance(value, str) else value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Decimal):
        return float(value) if value.is_finite() else None
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return None  # binary is never shown, even as a bound
    return str(value)[:MAX_VALUE_CHARS]


def as_number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(float(value)) else None
    return None


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    type: str  # as the warehouse reports it
    nulls: int
    distinct: int | None  # None for types a warehouse cannot count distinct (structs, arrays, variants)
    min: Any  # numerics and dates only; None when protected
    max: Any
    sum: float | None  # numerics only
    top: tuple[tuple[str, int], ...] | None  # value mix (value as text, rows), most frequent first
    protected: bool = False

    def as_state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "nulls": self.nulls,
            "distinct": self.distinct,
            "min": json_value(self.min),
            "max": json_value(self.max),
            "sum": self.sum,
            "top": [[value, count] for value, count in self.top] if self.top is not None else None,
            "protected": self.protected,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ColumnProfile:
        top = state.get("top")
        return cls(
            name=str(state["name"]),
            type=str(state.get("type") or ""),
            nulls=int(state.get("nulls") or 0),
            distinct=None if state.get("distinct") is None else int(state["distinct"]),
            min=state.get("min"),
            max=state.get("max"),
            sum=as_number(state.get("sum")),
            top=None if top is None else tuple((str(v), int(n)) for v, n in top),
            protected=bool(state.get("protected")),
        )


@dataclass(frozen=True)
class RelationProfile:
    warehouse: str
    relation: str  # db.schema.name, lower case
    row_count: int
    columns: dict[str, ColumnProfile]
    duplicates: dict[str, int]  # "col" or "col1,col2" -> rows beyond the first per key value
    profiled_at: float  # epoch seconds
    elapsed_ms: float
    skipped_columns: int = 0  # columns past the bound of one query, not profiled

    def null_rate(self, column: str) -> float | None:
        col = self.columns.get(column)
        if col is None:
            return None
        return col.nulls / self.row_count if self.row_count else 0.0

    def as_state(self) -> dict[str, Any]:
        return {
            "warehouse": self.warehouse,
            "relation": self.relation,
            "row_count": self.row_count,
            "columns": [c.as_state() for c in self.columns.values()],
            "duplicates": dict(self.duplicates),
            "profiled_at": self.profiled_at,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "skipped_columns": self.skipped_columns,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RelationProfile:
        columns = [ColumnProfile.from_state(c) for c in state.get("columns") or []]
        return cls(
            warehouse=str(state["warehouse"]),
            relation=str(state["relation"]),
            row_count=int(state.get("row_count") or 0),
            columns={c.name: c for c in columns},
            duplicates={str(k): int(v) for k, v in (state.get("duplicates") or {}).items()},
            profiled_at=float(state.get("profiled_at") or 0.0),
            elapsed_ms=float(state.get("elapsed_ms") or 0.0),
            skipped_columns=int(state.get("skipped_columns") or 0),
        )


@dataclass(frozen=True)
class Thresholds:
    """When a change between two profiles is significant. The defaults are the fixed, history-free ones;
    `monitors.learn_thresholds` narrows or widens them from a relation's own history.

    rows_low / rows_high: the relative row-count change (after/before - 1) outside which rows moved.
    null_points: a column's null rate moving more than this many percentage points (per column in
    `null_points_by_column`, the default otherwise). mix_points: a value's share moving more than this many points.
    new_duplicates: duplicate rows a declared-unique key may gain. mean_rel: a numeric column's mean (sum / non-null
    rows) moving by more than this fraction. distinct_factor: a high-cardinality column's distinct count moving
    this many times more (or less) than the rows did."""

    rows_low: float = -0.10
    rows_high: float = 0.10
    min_row_delta: int = 2
    null_points: float = 3.0
    null_points_by_column: dict[str, float] = field(default_factory=dict)
    mix_points: float = 3.0
    mix_min_rows: int = 1
    new_duplicates: int = 0
    mean_rel: float = 0.25
    distinct_factor: float = 2.0
    learned_from: int = 0  # profiles of history behind these thresholds (0: the fixed defaults)

    def nulls_for(self, column: str) -> float:
        return self.null_points_by_column.get(column, self.null_points)


DEFAULT_THRESHOLDS = Thresholds()
