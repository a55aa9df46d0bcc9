"""Agent-given patterns (orchestrator_detect_patterns) are bounded in compile memory, match work and answer size.

The attacks run in a child process under a 1 GiB address-space and 60 s CPU limit (tests/unit/bounded.py): on
the old engine the compile bombs grew to tens of GB and the backtracking patterns ran for ages."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from ade_platform.lib.orchestrators.patterns import (
    MAX_ANSWER_CHARS,
    MAX_GROUP_CHARS,
    MAX_PATTERN_CHARS,
    MAX_SNIPPET_CHARS,
    detect_patterns,
)
from tests.unit.bounded import run_bounded

BOMBS = [
    "(?:(?:(?:a{1000}){1000}){1000})",  # 31 characters
    "(?:(?:(?:a{1000}){1000}){1000})(?=x)",  # lookahead: not RE2's, so the static caps decide
    "((?:(?:a{1000}){1000}){1000})\\1",  # a backreference, likewise
    "(?:(?:a{100}){100})(?<=a)",
    "(?:[a-z]{1000,}){1000,}(?!b)",  # unbounded repetitions count their minimum
    "(?:a{999}|b{999}|c{999}){999}",
]


def test_compile_bombs_are_pattern_too_complex_within_a_memory_bound() -> None:
    results = run_bounded(
        "import json\n"
        "from ade_platform.lib.orchestrators.patterns import detect_patterns\n"
        f"print(json.dumps(detect_patterns('a' * 100, {BOMBS!r}, timeout_seconds=5)))"
    )
    assert [r["pattern"] for r in results] == BOMBS
    assert {r["error"] for r in results} == {"pattern_too_complex"}, results


def test_backtracking_patterns_finish_within_a_cpu_bound() -> None:
    # No time limit to speak of: only the engine's own bound can end these.
    results = run_bounded(
        "import json\n"
        "from ade_platform.lib.orchestrators.patterns import detect_patterns\n"
        "log = 'x' * 200_000 + '\\n' + 'a' * 100_000 + '\\n' + ('a ' * 50_000)\n"
        "found = detect_patterns(log, ['(x+x+)+y', '(a|aa)*c', '(a+)+$b', '(\\\\w+\\\\s?)*!'], "
        "timeout_seconds=100_000)\n"
        "print(json.dumps(found))"
    )
    assert results == []  # none of them matches, and each said so at once


def test_a_pattern_longer_than_the_cap_is_refused() -> None:
    (result,) = detect_patterns("x", ["x" * (MAX_PATTERN_CHARS + 1)])
    assert result["error"] == "pattern_too_complex" and len(result["pattern"]) == MAX_PATTERN_CHARS


def test_the_answer_is_bounded_whatever_the_patterns() -> None:
    log = "a" * 10_000  # 10 KB
    patterns = ["(a*)(a*)(a*)"] * 50 + ["(a)"] * 50
    results = detect_patterns(log, patterns)
    size = len(json.dumps(results))
    assert size <= MAX_ANSWER_CHARS * 1.2, size  # the old answer: 1.5 MB
    assert any(r.get("truncated") for r in results)
    for result in results:
        assert result["match_count"] >= 1
        for match in result.get("matches", []):
            assert len(match["matched_text"]) <= MAX_SNIPPET_CHARS
            assert len(match["line_snippet"]) <= MAX_SNIPPET_CHARS
            assert all(len(g or "") <= MAX_GROUP_CHARS for g in match.get("capture_groups", []))
    first = results[0]["matches"][0]
    assert first["capture_groups"] == ["a" * MAX_GROUP_CHARS, "", ""]


def test_a_long_line_is_scanned_as_a_whole_line_would_be() -> None:
    rng = random.Random(7)
    words = [rng.choice(["ERROR 500", "ok", "é", "warn", "x" * 40, "id=12345"]) for _ in range(60_000)]
    line = "start " + " ".join(words) + " the end"  # ~600 KB on one line: many RE2 windows
    for pattern in [r"ERROR \d+", r"id=(\d+)", r"é+", r"^start", r"end$", r"\bwarn\b", r"x{40} ok"]:
        (result,) = detect_patterns(line, [pattern]) or [{"match_count": 0}]
        assert result["match_count"] == len(re.findall(pattern, line)), pattern


def test_syntax_re2_lacks_still_works_on_the_backtracking_engine() -> None:
    log = "Database Error in model stg_orders\nabcabc\nlast"
    results = detect_patterns(log, [r"(?<=in model )\w+", r"(abc)\1", r"last\Z", r"(?x) Data  base"])
    assert [r["matches"][0]["matched_text"] for r in results] == ["stg_orders", "abcabc", "last", "Database"]


@pytest.mark.parametrize("pattern", ["a(b", "[z-a]", "x**", "(?<"])
def test_invalid_patterns_stay_invalid_regex(pattern: str) -> None:
    (result,) = detect_patterns("ab", [pattern])
    assert result["error"] == "invalid_regex" and result["detail"]


def test_a_child_killed_mid_pattern_refuses_that_pattern_and_the_next_ones_still_answer() -> None:
    """The kernel ends a child that overruns a limit (SIGKILL, SIGXCPU): that pattern is pattern_too_complex,
    and the patterns after it run in a fresh child."""
    import os
    import signal
    import threading

    from ade_platform.lib.orchestrators import pattern_pool

    detect_patterns("abc", [r"(?<=a)b"])  # a child is started and left idle in the pool
    pid = pattern_pool._POOL.idle[-1].process.pid  # the child the next call takes
    found: list[object] = []
    log = "a" * 5_000 + "\n" + "Database Error in model stg_orders"
    patterns = [
        r"((a+)+)\2\1b",
        r"(?<=in model )\w+",
    ]  # backtracks for its whole (long) budget, then a benign one

    def cpu_ticks() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime

    idle = cpu_ticks()
    worker = threading.Thread(
        target=lambda: found.extend(detect_patterns(log, patterns, timeout_seconds=600))
    )
    worker.start()
    # Wait until the child is busy on the first pattern (half a second more CPU), then end it.
    while cpu_ticks() < idle + os.sysconf("SC_CLK_TCK") // 2:
        threading.Event().wait(0.05)
    os.kill(pid, signal.SIGKILL)
    worker.join()
    stopped, benign = found
    assert stopped["error"] == "pattern_too_complex" and "stopped" in stopped["detail"], stopped
    assert benign["matches"][0]["matched_text"] == "stg_orders", benign
    assert pid not in [c.process.pid for c in pattern_pool._POOL.idle]
