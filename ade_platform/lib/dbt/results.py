"""run_results.json and sources.json: what failed, what was skipped (and why), what silently did not run,
and how fresh each source is. Plain functions over parsed artifacts and the lineage index."""

from __future__ import annotations

import fnmatch
import re
from collections import Counter, deque
from datetime import datetime
from typing import Any

from ade_platform.lib.errors import CodedError

FAILED = {"error", "fail", "runtime error", "partial success"}
SKIPPED = {"skipped"}
WARNED = {"warn"}
PASSED = {"success", "pass"}
_PERIOD_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}
_FRESHNESS_ORDER = {"runtime error": 0, "error": 1, "warn": 2, "pass": 3}
_GLOB_CHARS = re.compile(r"^[A-Za-z0-9_.\-*?\[\]!]+$")
_RESOURCE_PREFIXES = (
    "model.",
    "seed.",
    "snapshot.",
    "test.",
    "source.",
    "analysis.",
    "operation.",
    "exposure.",
)


class PatternError(CodedError, ValueError):
    """A glob pattern that cannot be what the caller meant (empty, unbalanced bracket, reversed range)."""

    def __init__(self, detail: str):
        super().__init__("invalid_pattern", detail)


def _name_of(uid: str, index: dict[str, Any] | None) -> tuple[str, str]:
    rec = (index or {}).get("nodes", {}).get(uid) if index else None
    rtype = uid.split(".", 1)[0]
    if rec:
        return rec.get("name") or uid.rsplit(".", 1)[-1], rec.get("resource_type") or rtype
    parts = uid.split(".")
    return (parts[2] if len(parts) > 2 else parts[-1]), rtype


def _started_at(result: dict[str, Any]) -> str | None:
    timing = result.get("timing") or []
    for step in timing:
        if step.get("name") == "execute" and step.get("started_at"):
            return step["started_at"]
    return timing[0].get("started_at") if timing else None


def _upstream_failure(uid: str, status: dict[str, str], index: dict[str, Any] | None) -> str | None:
    """The nearest ancestor of a skipped node that failed in the same run (what caused the skip)."""
    if not index:
        return None
    parents = index["parents"]
    seen = {uid}
    queue = deque(parents.get(uid, ()))
    while queue:
        current = queue.popleft()
        if current in seen:
            continue
        seen.add(current)
        if status.get(current) in FAILED:
            return current
        queue.extend(p for p in parents.get(current, ()) if p not in seen)
    return None


def summarize_run_results(run_results: dict[str, Any], index: dict[str, Any] | None) -> dict[str, Any]:
    """Failed, skipped (with the upstream failure that caused each skip) and warned nodes, with totals."""
    meta = run_results.get("metadata") or {}
    results = run_results.get("results") or []
    status = {r.get("unique_id"): str(r.get("status") or "").lower() for r in results}
    known = set((index or {}).get("nodes", {})) if index else None
    failed: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    warnings: list[dict[str, Any]] = []
    starts = []
    for result in results:
        uid = result.get("unique_id") or ""
        st = status.get(uid, "")
        started = _started_at(result)
        if started:
            starts.append(started)
        if st not in FAILED | SKIPPED | WARNED:
            continue
        name, rtype = _name_of(uid, index)
        entry: dict[str, Any] = {
            "node_id": uid,
            "name": name,
            "resource_type": rtype,
            "status": st,
            "error_message": result.get("message") if st not in SKIPPED else None,
        }
        if st in SKIPPED:
            entry["upstream_failure"] = _upstream_failure(uid, status, index)
            skipped.append(entry)
            continue
        entry["execution_time_seconds"] = result.get("execution_time")
        entry["started_at"] = started
        if result.get("failures") is not None:
            entry["failures"] = result.get("failures")
        (failed if st in FAILED else warnings).append(entry)
    counts = Counter(str(r.get("status") or "").lower() for r in results)
    args = run_results.get("args") or {}
    return {
        "run_id": meta.get("invocation_id"),
        "command": args.get("which"),
        "run_started_at": meta.get("invocation_started_at") or (min(starts) if starts else None),
        "generated_at": meta.get("generated_at"),
        "elapsed_seconds": run_results.get("elapsed_time"),
        "dbt_version": meta.get("dbt_version"),
        "failed": failed,
        "skipped": skipped,
        "warnings": warnings,
        "total_failed": len(failed),
        "total_skipped": len(skipped),
        "total_warnings": len(warnings),
        "total_passed": sum(counts[s] for s in PASSED),
        "total_results": len(results),
        "count_by_status": dict(sorted(counts.items())),
        "results_not_in_manifest": sum(1 for r in results if r.get("unique_id") not in known)
        if known is not None
        else None,
    }


def check_glob(pattern: str) -> str:
    """Validate a glob pattern; raise PatternError with the reason."""
    if not pattern or not pattern.strip():
        raise PatternError("empty pattern")
    if not _GLOB_CHARS.match(pattern):
        raise PatternError(f"pattern {pattern!r} has characters that never occur in dbt node names")
    i = 0
    while i < len(pattern):
        if pattern[i] == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("!", "]") else i + 1)
            if end < 0:
                raise PatternError(f"pattern {pattern!r} has an unclosed '['")
            body = pattern[i + 1 : end].lstrip("!")
            for lo, hi in re.findall(r"(.)-(.)", body):
                if lo > hi:
                    raise PatternError(f"pattern {pattern!r} has a reversed range {lo}-{hi}")
            i = end
        elif pattern[i] == "]":
            raise PatternError(f"pattern {pattern!r} has an unmatched ']'")
        i += 1
    return pattern


def _is_glob(pattern: str) -> bool:
    return any(ch in pattern for ch in "*?[")


def detect_silent_skip(
    ran: set[str],
    index: dict[str, Any],
    models: list[str],
    by_name: dict[str, list[str]],
    patterns: list[str],
) -> list[dict[str, Any]]:
    """For each pattern: the manifest models it names, and which of them are absent from the run results.

    Patterns match the short model name (glob), or a unique_id when they start with a resource prefix.
    Ephemeral models never appear in run results, so they are not expected.
    """
    records = index["nodes"]
    out = []
    for pattern in patterns:
        check_glob(pattern)
        if pattern.startswith(_RESOURCE_PREFIXES):
            if _is_glob(pattern):
                regex = re.compile(fnmatch.translate(pattern))
                expected = [uid for uid in records if regex.match(uid)]
            else:
                expected = [pattern] if pattern in records else []
        elif _is_glob(pattern):
            regex = re.compile(fnmatch.translate(pattern))
            expected = [uid for uid in models if regex.match(records[uid].get("name") or "")]
        else:
            expected = [
                uid for uid in by_name.get(pattern, ()) if records[uid].get("resource_type") == "model"
            ]
        expected = [uid for uid in expected if records[uid].get("materialization") != "ephemeral"]
        missing = sorted(uid for uid in expected if uid not in ran)
        by_prefix = pattern.startswith(_RESOURCE_PREFIXES)
        names = [uid if by_prefix else records[uid].get("name") for uid in missing]
        # As the spec's example reads: a name that matches nothing is itself a missing model (a warning);
        # `reason` keeps the difference between "not in the manifest" and "not in the run results".
        out.append(
            {
                "pattern": pattern,
                "expected_match_count": len(expected),
                "actual_match_count": len(expected) - len(missing),
                "missing_models": names if expected else [pattern],
                "missing_node_ids": missing,
                "severity": "warning" if missing or not expected else "ok",
                "reason": "no_match" if not expected else ("not_in_run_results" if missing else None),
            }
        )
    return out


def _seconds(rule: dict[str, Any] | None) -> float | None:
    if not rule or rule.get("count") is None or rule.get("period") not in _PERIOD_SECONDS:
        return None
    return float(rule["count"]) * _PERIOD_SECONDS[rule["period"]]


def _age(result: dict[str, Any]) -> float | None:
    if result.get("max_loaded_at_time_ago_in_s") is not None:
        return round(float(result["max_loaded_at_time_ago_in_s"]), 3)
    try:
        snap = datetime.fromisoformat(str(result["snapshotted_at"]).replace("Z", "+00:00"))
        loaded = datetime.fromisoformat(str(result["max_loaded_at"]).replace("Z", "+00:00"))
    except (KeyError, ValueError, TypeError):
        return None
    return round((snap - loaded).total_seconds(), 3)


def freshness_report(sources: dict[str, Any], index: dict[str, Any] | None) -> dict[str, Any]:
    """Per source table: status, timestamps, age and thresholds in seconds (sources.json v1-v3)."""
    records = (index or {}).get("nodes", {})
    rows = []
    for result in sources.get("results") or []:
        uid = result.get("unique_id") or ""
        rec = records.get(uid) or {}
        parts = uid.split(".")
        criteria = result.get("criteria") or {}
        row = {
            "source_name": rec.get("source_name") or (parts[2] if len(parts) > 3 else None),
            "table_name": rec.get("name") or (parts[-1] if len(parts) > 3 else None),
            "unique_id": uid,
            "status": str(result.get("status") or "").lower(),
            "max_loaded_at": result.get("max_loaded_at"),
            "snapshotted_at": result.get("snapshotted_at"),
            "age_seconds": _age(result),
            "warn_after_seconds": _seconds(criteria.get("warn_after")),
            "error_after_seconds": _seconds(criteria.get("error_after")),
            "filter": criteria.get("filter"),
            "in_manifest": (uid in records) if index else None,
        }
        if result.get("error"):
            row["error_message"] = result["error"]
        rows.append(row)
    rows.sort(key=lambda r: (_FRESHNESS_ORDER.get(r["status"], 9), r["unique_id"]))
    counts = Counter(r["status"] for r in rows)
    return {
        "generated_at": (sources.get("metadata") or {}).get("generated_at"),
        "elapsed_seconds": sources.get("elapsed_time"),
        "sources": rows,
        "total": len(rows),
        "count_by_status": dict(sorted(counts.items())),
        "results_not_in_manifest": sum(1 for r in rows if r["in_manifest"] is False) if index else None,
    }
