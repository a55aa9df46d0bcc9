"""Run records common to every backend, and the summary orchestrator_get_run_history returns."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ade_platform.lib.shapes import OpenShape

Status = Literal["success", "failed", "running", "queued", "other"]

# Each backend's state names, mapped to one vocabulary so filters and counts work across backends.
_STATUS: dict[str, Status] = {
    # Airflow DAG run and task instance states
    "success": "success",
    "failed": "failed",
    "upstream_failed": "failed",
    "running": "running",
    "restarting": "running",
    "up_for_retry": "running",
    "up_for_reschedule": "running",
    "deferred": "running",
    "queued": "queued",
    "scheduled": "queued",
    # Prefect state types
    "completed": "success",
    "crashed": "failed",
    "cancelled": "other",
    "cancelling": "running",
    "pending": "queued",
    "paused": "other",
    # Dagster run and step statuses
    "failure": "failed",
    "started": "running",
    "starting": "running",
    "not_started": "queued",
    "canceled": "other",
    "canceling": "running",
    "managed": "other",
    "skipped": "other",
}


class RunRecord(OpenShape):
    run_id: str
    state: str
    status: Status
    execution_date: str | None
    start_date: str | None
    end_date: str | None
    duration_seconds: float | None
    run_type: str | None
    external_trigger: bool | None


class HistoryRun(OpenShape):
    run_id: str
    state: str
    execution_date: str | None
    duration_seconds: float | None
    run_type: str | None


class HistorySummary(OpenShape):
    runs: list[HistoryRun]
    total_runs: int
    success_count: int
    failure_count: int
    avg_duration_seconds: float | None


def normalize_status(state: str | None) -> Status:
    return _STATUS.get((state or "").lower(), "other")


# The filters that name a state outside the shared vocabulary ("other"): each matches its own states only, so a
# filter of cancelled never returns a paused or skipped run.
_OTHER_FILTERS: dict[str, frozenset[str]] = {
    "cancelled": frozenset({"cancelled", "canceled"}),
    "canceled": frozenset({"cancelled", "canceled"}),
    "paused": frozenset({"paused"}),
    "skipped": frozenset({"skipped"}),
    "managed": frozenset({"managed"}),
}


def matches_status(record: RunRecord, status: str) -> bool:
    """Whether a run is in the state a filter names: a shared status (success, failed, running, queued, in any
    backend's words), or exactly one of the states outside it (cancelled, paused, ...); `any` matches every run."""
    wanted = status.strip().lower()
    if wanted == "any":
        return True
    state = str(record["state"]).lower()
    if wanted in _OTHER_FILTERS:
        return state in _OTHER_FILTERS[wanted]
    normalized = normalize_status(wanted)
    return state == wanted or (normalized != "other" and record["status"] == normalized)


def duration_seconds(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    try:
        return round((parse_iso(end) - parse_iso(start)).total_seconds(), 3)
    except ValueError:
        return None


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def summarize(runs: list[RunRecord]) -> HistorySummary:
    """Counts and the mean duration of finished runs, newest run first."""
    ordered = sorted(runs, key=lambda r: r["execution_date"] or r["start_date"] or "", reverse=True)
    durations = [r["duration_seconds"] for r in ordered if r["duration_seconds"] is not None]
    return {
        "runs": [
            {
                "run_id": r["run_id"],
                "state": r["state"],
                "execution_date": r["execution_date"],
                "duration_seconds": r["duration_seconds"],
                "run_type": r["run_type"],
            }
            for r in ordered
        ],
        "total_runs": len(ordered),
        "success_count": sum(r["status"] == "success" for r in ordered),
        "failure_count": sum(r["status"] == "failed" for r in ordered),
        "avg_duration_seconds": round(sum(durations) / len(durations), 3) if durations else None,
    }
