"""Timestamps as the systems we read write them (ISO 8601, with `Z` or an offset, or naive meaning UTC)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def parse_timestamp(value: Any) -> datetime | None:
    """An aware datetime from ISO text ("2026-02-19 06:20:15.123456+00:00", "...Z"; naive text is UTC); None
    for anything else (no value, not text, not a timestamp)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
