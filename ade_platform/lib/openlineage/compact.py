"""Fold OpenLineage events into what the graph and the hop health need: per job, the datasets its newest run read
and wrote (with their facets), its own facets, and a bounded history of run states.

Events arrive out of order and in pieces (a START naming the inputs, a COMPLETE adding the output statistics), so
they are sorted by `eventTime` and merged per run: the newest run of a job decides its inputs and outputs (an
event of that run naming none keeps what earlier events of it named), and each run keeps its newest state. The
result is bounded: `max_jobs` jobs (the least recently seen dropped), `max_runs` runs per job, facets of one
dataset or job past `MAX_FACET_BYTES` dropped (named in `dropped_facets`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ade_platform.lib.openlineage.events import kind_of

FORMAT = 1
MAX_FACET_BYTES = 64 << 10
MAX_ERROR_CHARS = 500
ENDED = {"COMPLETE": "success", "FAIL": "failed", "ABORT": "cancelled"}
# producer URL fragments -> the system that ran the job (shown on its node, never part of its id)
PRODUCERS = (
    ("airflow", "airflow"),
    ("dbt", "dbt"),
    ("spark", "spark"),
    ("dagster", "dagster"),
    ("flink", "flink"),
    ("great_expectations", "great_expectations"),
)


def producer_system(producer: str) -> str:
    low = producer.lower()
    return next((system for fragment, system in PRODUCERS if fragment in low), "openlineage")


def _bounded(facets: Any, dropped: list[str], where: str) -> dict[str, Any]:
    if not isinstance(facets, dict):
        return {}
    out = {}
    for name, facet in facets.items():
        if len(orjson.dumps(facet, default=str)) > MAX_FACET_BYTES:
            dropped.append(f"{where}:{name}")
            continue
        out[name] = facet
    return out


def _merge_datasets(
    current: list[dict[str, Any]], items: list[Any], extra: str, dropped: list[str]
) -> list[dict[str, Any]]:
    by_name = {(d["namespace"], d["name"]): d for d in current}
    for item in items:
        key = (item["namespace"], item["name"])
        entry = by_name.setdefault(key, {"namespace": key[0], "name": key[1], "facets": {}})
        entry["facets"].update(_bounded(item.get("facets"), dropped, f"{key[0]}/{key[1]}"))
        if item.get(extra):
            entry.setdefault(extra, {}).update(_bounded(item[extra], dropped, f"{key[0]}/{key[1]}"))
    return list(by_name.values())


def _error_of(run_facets: dict[str, Any]) -> str | None:
    error = run_facets.get("errorMessage")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])[:MAX_ERROR_CHARS]
    return None


class _Folder:
    def __init__(self, max_jobs: int, max_runs: int):
        self.max_jobs, self.max_runs = max_jobs, max_runs
        self.jobs: dict[tuple[str, str], dict[str, Any]] = {}
        self.datasets: dict[tuple[str, str], dict[str, Any]] = {}
        self.dropped_facets: list[str] = []
        self.events = 0

    def add(self, event: dict[str, Any]) -> None:
        self.events += 1
        kind = kind_of(event)
        when = event["eventTime"]
        if kind == "dataset":
            ds = event["dataset"]
            key = (ds["namespace"], ds["name"])
            entry = self.datasets.setdefault(key, {"namespace": key[0], "name": key[1], "facets": {}})
            entry["facets"].update(_bounded(ds.get("facets"), self.dropped_facets, f"{key[0]}/{key[1]}"))
            entry["event_time"] = when
            return
        job_in = event["job"]
        key = (job_in["namespace"], job_in["name"])
        job = self.jobs.setdefault(
            key,
            {
                "namespace": key[0],
                "name": key[1],
                "producer": event["producer"],
                "system": producer_system(event["producer"]),
                "facets": {},
                "inputs": [],
                "outputs": [],
                "runs": [],
                "run_id": None,
            },
        )
        job["facets"].update(_bounded(job_in.get("facets"), self.dropped_facets, f"job {key[0]}/{key[1]}"))
        job["last_event_time"] = when
        job["producer"] = event["producer"]
        run_id = (event.get("run") or {}).get("runId")
        if run_id is not None and run_id != job["run_id"]:
            if event.get("inputs") or event.get("outputs"):
                job["inputs"], job["outputs"] = [], []
            job["run_id"] = run_id
        job["inputs"] = _merge_datasets(
            job["inputs"], event.get("inputs") or [], "inputFacets", self.dropped_facets
        )
        job["outputs"] = _merge_datasets(
            job["outputs"], event.get("outputs") or [], "outputFacets", self.dropped_facets
        )
        if kind == "run":
            self._run(job, event, run_id, when)

    def _run(self, job: dict[str, Any], event: dict[str, Any], run_id: str, when: str) -> None:
        runs = job["runs"]
        run = next((r for r in runs if r["run_id"] == run_id), None)
        if run is None:
            run = {"run_id": run_id, "state": None, "status": "running", "started_at": None, "ended_at": None}
            runs.insert(0, run)
            del runs[self.max_runs :]
        state = event.get("eventType") or "OTHER"
        if state == "START":
            run["started_at"] = run["started_at"] or when
        if state in ENDED:
            run["ended_at"], run["status"] = when, ENDED[state]
        if state != "OTHER":
            run["state"] = state
        facets = (event.get("run") or {}).get("facets") or {}
        error = _error_of(facets)
        if error:
            run["error"] = error
        parent = facets.get("parent")
        if isinstance(parent, dict) and isinstance(parent.get("job"), dict):
            job["parent"] = {k: parent["job"].get(k) for k in ("namespace", "name")}

    def result(self) -> dict[str, Any]:
        jobs = sorted(self.jobs.values(), key=lambda j: j.get("last_event_time") or "", reverse=True)
        kept = jobs[: self.max_jobs]
        for job in kept:
            job.pop("run_id", None)
        return {
            "format": FORMAT,
            "jobs": sorted(kept, key=lambda j: (j["namespace"], j["name"])),
            "datasets": sorted(self.datasets.values(), key=lambda d: (d["namespace"], d["name"])),
            "stats": {
                "events": self.events,
                "jobs": len(kept),
                "dropped_jobs": len(jobs) - len(kept),
                "datasets": len(self.datasets),
            },
            "dropped_facets": sorted(set(self.dropped_facets))[:100],
        }


def fold(events: Iterable[dict[str, Any]], max_jobs: int = 5_000, max_runs: int = 20) -> dict[str, Any]:
    """The `openlineage_events` snapshot from checked events (events.check_event), in any order."""
    folder = _Folder(max_jobs, max_runs)
    for event in sorted(events, key=lambda e: _sort_key(e["eventTime"])):
        folder.add(event)
    return folder.result()


def _sort_key(when: str) -> float:
    from datetime import datetime

    try:
        moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return moment.timestamp()
