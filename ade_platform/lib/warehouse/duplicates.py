"""Duplicate keys: severity thresholds and the answer shape of warehouse_detect_duplicates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_SAMPLES = 5
_HELPER_COLUMNS = {"ade_occurrences", "ade_rn"}


def severity(rate_pct: float, duplicate_keys: int) -> str:
    """none (no duplicates), low (< 0.1 % of rows), medium (0.1-1 %), high (> 1 %)."""
    if duplicate_keys == 0:
        return "none"
    if rate_pct < 0.1:
        return "low"
    if rate_pct <= 1.0:
        return "medium"
    return "high"


def _int(value: Any) -> int:
    return int(value) if value is not None else 0


def duplicates_answer(
    table_name: str,
    key_columns: Sequence[str],
    summary: dict[str, Any],
    samples: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """Shape the two query results (summary row, sample rows) into the spec's response.

    Column names are matched case-insensitively (Snowflake upper-cases unquoted aliases).
    """
    summary = {k.lower(): v for k, v in summary.items()}
    total = _int(summary.get("total_rows"))
    dup_keys = _int(summary.get("duplicate_key_count"))
    dup_rows = _int(summary.get("duplicate_row_count"))
    rate = round(100.0 * dup_rows / total, 2) if total else 0.0
    lowered = {k.lower(): k for k in key_columns}
    sample_duplicates = []
    for row in list(samples)[:MAX_SAMPLES]:
        values = {k: v for k, v in row.items() if k.lower() not in _HELPER_COLUMNS}
        occurrences = next((v for k, v in row.items() if k.lower() == "ade_occurrences"), None)
        entry: dict[str, Any] = {lowered[k.lower()]: v for k, v in values.items() if k.lower() in lowered}
        entry["occurrence_count"] = _int(occurrences)
        entry["sample_row"] = values
        sample_duplicates.append(entry)
    return {
        "table_name": table_name,
        "key_columns": list(key_columns),
        "total_rows": total,
        "distinct_key_count": _int(summary.get("distinct_key_count")),
        "duplicate_key_count": dup_keys,
        "duplicate_row_count": dup_rows,
        "duplication_rate_pct": rate,
        "severity": severity(rate, dup_keys),
        "sample_duplicates": sample_duplicates,
    }
