"""Run a dashboard's tiles with bounded concurrency and a per-tile timeout, and summarise their health.

The BI client supplies `run_one(element) -> row count` (raising TileError with an agent-safe message when the
tile's query fails); this module owns the scheduling, the timing and the classification ok / error / empty.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Protocol

from ade_platform.lib.bi.shapes import DashboardStatus, ElementInfo, TileOutcome, TileStatus
from ade_platform.lib.errors import CodedError


class TileError(CodedError):
    """A tile's query failed; the message is safe to show (no credential, no path, no data value)."""

    def __init__(self, detail: str):
        super().__init__("query_failed", detail)


class TileRunner(Protocol):
    def run_element(self, element: ElementInfo, timeout: float) -> int: ...


def classify(row_count: int | None, error: str | None, min_rows: int) -> TileStatus:
    if error is not None:
        return "error"
    if row_count is None:
        return "unknown"
    return "empty" if row_count < min_rows else "ok"


def run_tiles(
    elements: Sequence[ElementInfo],
    run_one: Callable[[ElementInfo], int],
    *,
    concurrency: int,
    timeout: float,
    min_rows: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list[TileOutcome]:
    """Run every runnable element; outcomes in the elements' order. Text tiles (no query) are not run.

    At most `concurrency` tiles run at once; a tile still running `timeout` seconds after it started is
    reported as an error (its thread is abandoned, the client's own HTTP timeout ends it).
    """
    tiles = [e for e in elements if e["runnable"]]
    outcomes: dict[str, TileOutcome] = {}
    started: dict[str, float] = {}
    lock = threading.Lock()

    def body(element: ElementInfo) -> tuple[int | None, str | None, float]:
        t0 = time.perf_counter()
        with lock:
            started[element["id"]] = t0
        if element["static_error"]:
            return None, element["static_error"], 0.0
        try:
            count = run_one(element)
            return count, None, (time.perf_counter() - t0) * 1000
        except TileError as exc:
            return None, str(exc), (time.perf_counter() - t0) * 1000

    def record(element: ElementInfo, count: int | None, error: str | None, elapsed: float) -> None:
        outcomes[element["id"]] = TileOutcome(
            element_id=element["id"],
            title=element["title"],
            status=classify(count, error, min_rows),
            row_count=count if error is None else None,
            error=error,
            elapsed_ms=round(elapsed, 1),
        )
        if progress is not None:
            progress(len(outcomes), len(tiles))

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="bi-tile")
    try:
        pending: dict[Future, ElementInfo] = {pool.submit(body, e): e for e in tiles}
        while pending:
            done, _ = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            for future in done:
                element = pending.pop(future)
                record(element, *future.result())
            now = time.perf_counter()
            for future, element in list(pending.items()):
                with lock:
                    began = started.get(element["id"])
                if began is not None and now - began > timeout:
                    pending.pop(future)
                    record(
                        element, None, f"the tile did not finish within {timeout:g} s", (now - began) * 1000
                    )
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return [outcomes[e["id"]] for e in tiles]


def run_with(
    client: TileRunner,
    elements: Sequence[ElementInfo],
    *,
    concurrency: int,
    timeout: float,
    min_rows: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list[TileOutcome]:
    """run_tiles through a BI client's own runner, each tile given `timeout` seconds."""
    return run_tiles(
        elements,
        lambda e: client.run_element(e, timeout),
        concurrency=concurrency,
        timeout=timeout,
        min_rows=min_rows,
        progress=progress,
    )


def outcome_rows(outcomes: Sequence[TileOutcome], names: Mapping[str, str]) -> list[dict[str, Any]]:
    """Each outcome as a row of the fields `names` picks (outcome field -> the row's name for it), in its
    order."""
    return [{name: o[field] for field, name in names.items()} for o in outcomes]


def dashboard_status(outcomes: Sequence[TileOutcome]) -> DashboardStatus:
    """error when any tile failed; ok otherwise (an empty tile renders, it just shows nothing)."""
    if any(o["status"] == "error" for o in outcomes):
        return "error"
    if any(o["status"] == "unknown" for o in outcomes):
        return "unknown"
    return "ok"


def first_error(outcomes: Sequence[TileOutcome]) -> str | None:
    for o in outcomes:
        if o["error"]:
            title = f"'{o['title']}'" if o["title"] else f"element {o['element_id']}"
            return f"{title}: {o['error']}"
    return None
