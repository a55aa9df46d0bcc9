"""Table freshness: the newest timestamp in a column, how old it is, and the pass/warn/error verdict."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any


def as_utc(value: Any) -> datetime | None:
    """A DATE/TIMESTAMP value (or its ISO text, or epoch seconds) as an aware UTC datetime.

    Naive timestamps are taken as UTC (TIMESTAMP_NTZ, DuckDB TIMESTAMP, BigQuery DATETIME); a DATE is its
    midnight UTC.
    """
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(float(value), tz=UTC)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            return as_utc(datetime.fromisoformat(text))
        except ValueError:
            return None
    return None


def iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z") if value else None


def staleness_hours(max_value: Any, now: datetime) -> float | None:
    newest = as_utc(max_value)
    if newest is None:
        return None
    return round((now - newest).total_seconds() / 3600, 2)


def verdict(hours: float | None, warn_after: float | None, error_after: float | None) -> str:
    """pass / warn / error; an empty table (no timestamp) is an error."""
    if hours is None:
        return "error"
    if error_after is not None and hours > error_after:
        return "error"
    if warn_after is not None and hours > warn_after:
        return "warn"
    return "pass"


def freshness_answer(
    table_name: str,
    column: str,
    max_value: Any,
    threshold_hours: float,
    now: datetime,
    row_count: int | None = None,
) -> dict[str, Any]:
    """The spec's response shape for warehouse_check_freshness."""
    hours = staleness_hours(max_value, now)
    return {
        "table_name": table_name,
        "timestamp_column": column,
        "max_timestamp": iso(as_utc(max_value)),
        "checked_at": iso(now),
        "staleness_hours": hours,
        "freshness_threshold_hours": float(threshold_hours),
        "is_fresh": hours is not None and hours <= threshold_hours,
        "row_count_sampled": row_count,
    }
