"""What every benchmark suite measures with: wall-clock samples and their percentiles."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def pct(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) of the samples."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def fmt_ms(values: list[float]) -> str:
    return f"p50 {pct(values, 50) * 1000:8.3f} ms   p95 {pct(values, 95) * 1000:8.3f} ms"


def timed(fn: Callable[[], Any], repeats: int, *, warm: bool = False) -> list[float]:
    """Seconds per call of fn, `repeats` times; with warm=True one untimed call first."""
    if warm:
        fn()
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def quick_mode(description: str | None = None) -> bool:
    """The command line of a suite that takes only `--quick` (small sizes, few repetitions): whether it was given."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repetitions")
    return parser.parse_args().quick
