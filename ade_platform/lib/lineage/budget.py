"""Run live probes closest first within a time budget, a few at a time, and say what the budget did not reach.

A probe is one bounded read (a single-table catalog query, a `max(loaded_at)`, one run listing, one file). They
are submitted in the order given (closest to the symptom first) to a small pool; when the budget is spent, probes
not yet started are dropped and probes still running are abandoned (each is bounded by its own client timeout),
and both are listed as not reached. One probe may have a budget of its own (the symptom: a tile runs up to the BI
tile timeout).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Probe:
    key: str  # unique: "<kind>:<node>"
    kind: str  # symptom | table_schema | source_freshness | run_results | invocation | builder_run
    node: str | None
    depth: int
    run: Callable[[], Any]
    deadline_s: float | None = None  # its own budget (from the start), instead of the shared one
    facts: dict[str, Any] | None = None  # what its reading is about (to record it as an observation)


@dataclass
class ProbeOutcome:
    values: dict[str, Any] = field(default_factory=dict)  # key -> value
    errors: dict[str, BaseException] = field(default_factory=dict)  # key -> what it raised
    not_reached: list[dict[str, Any]] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)  # key -> how long it took (finished ones)
    elapsed_ms: float = 0.0


def run_probes(probes: list[Probe], budget_s: float, workers: int = 4) -> ProbeOutcome:
    """Run the probes (in order) within budget_s; every probe ends up in values, errors or not_reached."""
    out = ProbeOutcome()
    started = time.perf_counter()
    if not probes:
        return out
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="lineage-probe")
    pending: dict[Future, Probe] = {}

    def timed(probe: Probe) -> Any:
        began = time.perf_counter()
        try:
            return probe.run()
        finally:
            out.timings_ms[probe.key] = round((time.perf_counter() - began) * 1000, 1)

    try:
        for probe in probes:
            pending[pool.submit(timed, probe)] = probe
        while pending:
            elapsed = time.perf_counter() - started
            # the next moment something is due: the shared budget, or a longer own deadline still pending
            due = [p.deadline_s if p.deadline_s is not None else budget_s for p in pending.values()]
            remaining = max(due) - elapsed
            if remaining <= 0:
                break
            done, _ = wait(pending, timeout=min(remaining, 0.05), return_when=FIRST_COMPLETED)
            for future in done:
                probe = pending.pop(future)
                exc = future.exception()
                if exc is not None:
                    out.errors[probe.key] = exc
                else:
                    out.values[probe.key] = future.result()
            elapsed = time.perf_counter() - started
            for future, probe in list(pending.items()):
                limit = probe.deadline_s if probe.deadline_s is not None else budget_s
                if elapsed >= limit:
                    pending.pop(future)
                    out.not_reached.append(_missed(probe, limit, started=not future.cancel()))
        for future, probe in pending.items():
            out.not_reached.append(_missed(probe, budget_s, started=not future.cancel()))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    out.elapsed_ms = (time.perf_counter() - started) * 1000
    return out


def _missed(probe: Probe, limit: float, started: bool) -> dict[str, Any]:
    return {
        "probe": probe.kind,
        "node": probe.node,
        "hops_from_symptom": probe.depth,
        "why": f"{'still running' if started else 'not started'} when the {limit * 1000:.0f} ms budget ran out",
    }
