"""Scrubbing and pattern scanning on hostile input stay linear (issue 23 section 2).

    python -m benchmarks.orchestrator.hostile [--quick]

- `scrub_secrets` on logs built to be quadratic for backtracking patterns (`a-a-a-...`, `eyJeyJ...`,
  `a://a:a://a:...`, `passwordpassword...`), at three sizes up to 50 MB, with 12 configured secrets (each in
  its encoded and split forms): time, MB/s, and the time ratio against the smallest size (linear: the size
  ratio);
- `cap_log` on the 50 MB log: what orchestrator_fetch_logs pays (the cap comes before the scrub);
- `detect_patterns` with catastrophic-backtracking patterns (`(x+x+)+y`, `(a|aa)*c`, `(\\w+\\s?)*!`) and the
  built-in signatures on hostile text at three sizes up to 8 MB, with no time limit in the way.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from ade_platform.lib.orchestrators.logs import cap_log
from ade_platform.lib.orchestrators.patterns import detect_patterns, detect_signatures
from ade_platform.lib.secrets import SecretScrubber

UNITS = ("a-", "eyJ", "a://a:", "password", "--password", "Bearer ")
SECRETS = [f"configured-secret-{i:02d}-Zq8/xN+3vR7&yT2" for i in range(12)]
PATTERNS = [r"(x+x+)+y", r"(a|aa)*c", r"(\w+\s?)*!", r"Database Error in model (\w+)"]


def _hostile(size: int) -> str:
    """`size` characters: the hostile units in turn, each a long run (one line per 64 KB)."""
    chunk = 64 * 1024
    parts = []
    for i in range(0, size, chunk):
        unit = UNITS[(i // chunk) % len(UNITS)]
        parts.append((unit * (chunk // len(unit) + 1))[: chunk - 1] + "\n")
    return "".join(parts)[:size]


def _hostile_lines(size: int) -> str:
    """What the regex bombs feed on: long runs of x, of `a`, of `a a a`, in lines of 20 KB."""
    line = 20_000
    units = ("x", "a", "a ")
    parts = []
    for i in range(0, size, line):
        unit = units[(i // line) % len(units)]
        parts.append((unit * line)[: line - 1] + "\n")
    return "".join(parts)[:size]


def _seconds(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def _rows(label: str, sizes: list[int], times: list[float]) -> None:
    print(f"  {label}")
    for size, seconds in zip(sizes, times, strict=True):
        ratio = seconds / times[0]
        print(
            f"    {size / 1e6:7.1f} MB  {seconds * 1000:9.1f} ms  {size / 1e6 / seconds:8.1f} MB/s  "
            f"time x{ratio:5.1f} for size x{size / sizes[0]:5.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args, _ = parser.parse_known_args()
    repeats = 1 if args.quick else 3
    scrubber = SecretScrubber(SECRETS)
    print("hostile input: linear time (best of", repeats, "runs)")

    sizes = [5_000_000, 20_000_000, 50_000_000] if not args.quick else [1_000_000, 4_000_000, 10_000_000]
    logs = [_hostile(size) for size in sizes]
    times = [_seconds(lambda log=log: scrubber.scrub(log), repeats) for log in logs]
    _rows("scrub_secrets, whole log (12 configured secrets + every shape)", sizes, times)
    capped = _seconds(lambda: cap_log(logs[-1], scrubber, 50_000), repeats)
    print(f"  cap_log of the {sizes[-1] / 1e6:.0f} MB log to 50,000 chars: {capped * 1000:.1f} ms")

    # up to 8 MB, past the tool's 2 MB input cap: below a megabyte, fixed costs hide the slope
    sizes = [1_000_000, 4_000_000, 8_000_000] if not args.quick else [500_000, 1_000_000, 2_000_000]
    texts = [_hostile_lines(size) for size in sizes]
    times = [_seconds(lambda t=t: detect_patterns(t, PATTERNS, timeout_seconds=600), repeats) for t in texts]
    _rows(f"detect_patterns, {len(PATTERNS)} patterns incl. 3 catastrophic ones", sizes, times)
    times = [_seconds(lambda t=t: detect_signatures(t, timeout_seconds=600), repeats) for t in texts]
    _rows("detect_signatures (the built-in library)", sizes, times)


if __name__ == "__main__":
    main()
