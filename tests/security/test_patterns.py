"""Hostile agent patterns (orchestrator_detect_patterns) through MCP, issue 34: whatever the syntax, a pattern is
measured on the parse of the engine that runs it, the `regex` fallback runs in a bounded child, and the gateway's
own memory stays flat.

The old check read patterns with Python's `re` parser while the fallback compiled them with `regex`'s, and the two
disagree: verbose mode reads whitespace and comments inside braces (`a{ 1000 }`, `a{1000#...}`) as a count, and
`regex` has syntax of its own (fuzzy constraints, possessive quantifiers, recursion, named lists). Each class
below is generated over those disagreements. The gateway runs in a child Python under 1 GiB of address space
(tests/unit/bounded.py) and reports its own peak RSS (VmHWM) before and after the attack: on the old code the
bombs took it to gigabytes (MemoryError, then internal_error) and the recursive patterns grew it by hundreds of MB
within their time budget.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from itertools import product as cartesian
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_bridge.errors import StructuredErrors
from tests.helpers import call_tool
from tests.unit.bounded import run_bounded

REFUSED = {"pattern_too_complex", "invalid_regex"}
# Lines the benign patterns read, then what the recursive and backtracking patterns feed on.
LOG = "\n".join(
    [
        "2026-11-28 Database Error in model stg_orders",
        "WARN retry 3 of 5 (backoff 20s)",
        "abcabc xyzxyz",
        "user=bob id=42 status=failed",
        "Compilation Error in macro cents_to_dollars",
        "a" * 3000,
        "ab" * 2000,
        "x",
    ]
)
GROWTH_KB = 150 * 1024  # the gateway's peak RSS may grow this much over the attack (the old code: GBs)
BRACES = ["{{ {n} }}", "{{{n} }}", "{{ {n}}}", "{{{n}#c\n}}", "{{\t{n}\n}}", "{{{n}# why not\n}}"]
FORCE = ["(?=x)", "(?<=a)", "(?!b)", "(?<!b)", r"\Z"]  # syntax RE2 lacks: these run on the fallback


def _nest(unit: str, counts: list[str]) -> str:
    pattern = unit
    for count in counts:
        pattern = f"(?:{pattern}){count}"
    return pattern


def verbose_braces() -> list[str]:
    """Verbose mode (global and scoped), whitespace and comments inside the braces: `regex` reads a count."""
    out = []
    for brace, depth, force in cartesian(BRACES, (2, 3), ("", "(?=x)", "(?<!b)")):
        out.append("(?x)" + _nest("a", [brace.format(n=1000)] * depth) + force)
    for brace, unit in cartesian(BRACES, ("a", "[a-z]", r"\w")):
        out.append("(?x:" + _nest(unit, [brace.format(n=1000)] * 3) + ")")
    return out


def regex_only_syntax() -> list[str]:
    """Fuzzy constraints, atomic groups, possessive quantifiers, POSIX classes, properties, graphemes nested in
    counted repetitions; named lists and version flags `regex` alone reads."""
    units = [
        "a{e<=1}",
        "(?:ab){i<=2,d<=1}",
        "a{s<=2}",
        "(?>a+)",
        "a++",
        "a*+",
        "[[:alpha:]]",
        r"\p{L}",
        r"\X",
    ]
    counts = (["{1000}"] * 2, ["{1000}"] * 3, ["{100}", "{100}"], ["{ 1000 }"] * 2)
    out = []
    for unit, count, force in cartesian(units, counts, ("(?=x)", "")):
        verbose = "(?x)" if " " in count[0] else ""
        out.append(verbose + _nest(unit, count) + force)
    return [*out, r"\L<words>", r"(?V1)[[a-z]--[aeiou]]{1000}", r"(?V1)(?:[[a-z]&&[^aeiou]]{1000}){1000}"]


def huge_counts() -> list[str]:
    """Counted repetitions past the product cap, on both engines (RE2 when nothing forces the fallback)."""
    highs = ("{1001}", "{5000}", "{65535}", "{100000}", "{1000,}", "{2000,3000}", "{0,99999}")
    out = [f"(?:a{high}){high}{force}" for high, force in cartesian(highs, ("", *FORCE))]
    return [
        *out,
        "(?:a{999}|b{999}|c{999}){999}(?=x)",
        "((?:(?:a{1000}){1000}){1000})",
        "a{4294967296}(?=x)",
        "a{99999999999999999999}(?=x)",
    ]


def lookaround_nesting() -> list[str]:
    """Nested repetitions inside lookaround, and lookaround inside nested repetitions."""
    out = []
    for look, depth, unit in cartesian(("(?={})", "(?!{})", "(?<={})", "(?<!{})", "(?:{})(?=x)"), (2, 3), ("a", "[a-z]")):  # fmt: skip
        out.append(look.format(_nest(unit, ["{1000}"] * depth)))
        out.append(_nest(look.format(unit), ["{1000}"] * depth))
    return out


def backreference_bombs() -> list[str]:
    """A group of nested repetitions, referred back to (numbered, named, \\g<>), or repeated by reference."""
    out = []
    for depth, ref, brace in cartesian((2, 3), (r"\1", r"(?:\1){1000}", "(?P=g)", r"\g<1>"), ("{1000}", "{ 1000 }")):  # fmt: skip
        body = _nest("a", [brace] * depth)
        group = f"(?P<g>{body})" if "g>" in ref or "=g" in ref else f"({body})"
        out.append(("(?x)" if " " in brace else "") + group + ref)
    return out


def inline_flags() -> list[str]:
    """Verbose mode among other inline flags, global and scoped."""
    out = []
    for flag, brace in cartesian(("(?x)", "(?xi)", "(?ix)", "(?sx)", "(?xm)", "(?xu)"), BRACES[:3]):
        out.append(flag + _nest("a", [brace.format(n=1000)] * 3))
    for flag, brace in cartesian(("(?x-i:", "(?ix:", "(?x:(?i:"), BRACES[:3]):
        out.append(flag + _nest("a", [brace.format(n=1000)] * 3) + ")" * flag.count(":"))
    return out


BOMBS: dict[str, Callable[[], list[str]]] = {
    "verbose_braces": verbose_braces,
    "regex_only_syntax": regex_only_syntax,
    "huge_counts": huge_counts,
    "lookaround_nesting": lookaround_nesting,
    "backreference_bombs": backreference_bombs,
    "inline_flags": inline_flags,
}
# Within every static cap, but recursion and backreferences make the match itself grow: the child's memory
# bound or the time budget stops them (no match is an answer too).
BACKTRACKING = [
    r"(?:(?R)|a)*b",
    r"(a|(?1)a)*b",
    r"((?:(?1)|a)*)b",
    r"(?:(?R)?a)*b",
    r"(?<n>(?&n)?a)+b",
    r"((a+)+)\2\1b",
    r"(a*)*\1b",
]
BENIGN = [
    r"(?<=in model )\w+",
    r"(?<=in macro )(\w+)",
    r"\d+(?= of)",
    r"(?<=re)try \d",
    r"(abc)\1",
    r"(?P<w>xyz)(?P=w)",
    r"x\Z",
    r"(?x) Data  base \s Error",
    r"(?x) id = (\d{ 1, 3 })  # the id",
    r"(?i)(?<=error )IN",
    r"\d+(?!\d|s)",
    r"(?>\w+)=(?=\w)",
    r"status=\w++",
    r"(?=.*failed)user=(\w+)",
    r"\b(\w+)\s(?=Error)",
]


def _attack() -> dict[str, Any]:
    """Every pattern through MCP, in calls of at most 100 (the tool's cap), each call with a benign pattern
    last; the gateway's peak RSS before and after."""
    patterns = [p for make in BOMBS.values() for p in make()] + BACKTRACKING + BENIGN
    calls = [[*patterns[i : i + 99], r"(?<=id=)\d+"] for i in range(0, len(patterns), 99)]
    code = f"""
import json, pathlib, tempfile
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import call_tools
def peak():
    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))
server = build_server(settings_for(pathlib.Path(tempfile.mkdtemp()) / 'ade'), only='orchestrator')
log, calls = json.loads({json.dumps([LOG, calls])!r})
call_tools(server, [('orchestrator_detect_patterns', {{'log_text': 'warm up', 'patterns': ['up']}})])
before = peak()
answers = call_tools(server, [('orchestrator_detect_patterns', {{'log_text': log, 'patterns': c}}) for c in calls])
print(json.dumps({{'before': before, 'after': peak(), 'calls': calls, 'answers': answers}}))
"""
    return run_bounded(code)


@pytest.fixture(scope="module")
def attack() -> dict[str, Any]:
    return _attack()


def _by_pattern(attack: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any] | None]]:
    for call, (ok, answer) in zip(attack["calls"], attack["answers"], strict=True):
        assert ok, answer
        results = {r["pattern"]: r for r in answer["results"]}
        assert answer["patterns_checked"] == len(call)
        # the benign pattern after the hostile ones still answered
        assert results[r"(?<=id=)\d+"]["matches"][0]["matched_text"] == "42", answer
        for pattern in call:
            yield pattern, results.get(pattern)


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_each_bomb_is_refused_on_its_own(attack: dict[str, Any], name: str) -> None:
    variants = BOMBS[name]()
    assert len(variants) >= 10 and len(set(variants)) == len(variants)
    results = dict(_by_pattern(attack))
    for pattern in variants:
        result = results[pattern]
        assert result is not None and result["error"] in REFUSED, (name, pattern, result)
        assert result["match_count"] == 0 and result["detail"], result


def test_recursion_and_backreferences_are_stopped_in_the_bounded_child(attack: dict[str, Any]) -> None:
    results = dict(_by_pattern(attack))
    outcomes = {p: (results[p] or {}).get("error", "no match") for p in BACKTRACKING}
    assert set(outcomes.values()) <= {"no match", "pattern_timeout", "pattern_too_complex"}, outcomes
    # Some of them outgrow the child's memory: the child, not the gateway, paid for it.
    memory = [p for p in BACKTRACKING if "memory" in ((results[p] or {}).get("detail") or "")]
    assert memory, outcomes


def test_the_gateway_peak_memory_stays_flat(attack: dict[str, Any]) -> None:
    assert attack["after"] - attack["before"] <= GROWTH_KB, (attack["before"], attack["after"])


def test_benign_lookaround_and_backreferences_answer_as_the_engine_does(attack: dict[str, Any]) -> None:
    import regex

    results = dict(_by_pattern(attack))
    for pattern in BENIGN:
        compiled = regex.compile(pattern, flags=regex.VERSION0)
        expected = [
            (number, found.group(0), list(found.groups()))
            for number, line in enumerate(LOG.splitlines(), start=1)
            for found in compiled.finditer(line)
        ]
        result = results[pattern]
        assert expected and result is not None and "error" not in result, (pattern, result)
        got = [(m["line_number"], m["matched_text"], m.get("capture_groups", [])) for m in result["matches"]]
        assert result["match_count"] == len(expected) and got == expected, (pattern, got, expected)


# ---- generated nestings: whatever the brace's spelling, a product past the cap is refused ------------------
SPELLINGS = ["{%d}", "{ %d }", "{%d }", "{%d#n\n}", "{\t%d}"]


@st.composite
def nested_patterns(draw: st.DrawFn) -> tuple[str, int]:
    """A nested counted repetition in a random spelling, and the product `regex` reads in it."""
    verbose = draw(st.sampled_from(["", "(?x)", "scoped"]))
    pattern, product = draw(st.sampled_from(["a", "[a-z]", r"\w", "(?:ab)", "a{e<=1}"])), 1
    for _ in range(draw(st.integers(1, 3))):
        count = draw(st.sampled_from([2, 10, 31, 32, 999, 1000, 1001, 5000]))
        spelling = draw(st.sampled_from(SPELLINGS))
        pattern = f"(?:{pattern}){spelling % count}"
        # outside verbose mode, a brace holding whitespace or a comment is literal text, not a count
        product *= count if verbose or spelling == "{%d}" else 1
    pattern = f"(?x:{pattern})" if verbose == "scoped" else verbose + pattern
    return pattern + draw(st.sampled_from(["", "(?=a)", "(?<!b)", r"(?:\Z|a)"])), product


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cases=st.lists(nested_patterns(), min_size=1, max_size=6))
def test_generated_nestings_past_the_cap_are_refused(orchestrator_server: FastMCP, cases: list[tuple[str, int]]) -> None:  # fmt: skip
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ok, answer = call_tool(
        orchestrator_server,
        "orchestrator_detect_patterns",
        {"log_text": "a" * 2000 + "\nab\n", "patterns": [p for p, _ in cases]},
    )
    assert ok, answer
    results = {r["pattern"]: r for r in answer["results"]}
    for pattern, product in cases:
        result = results.get(pattern, {})
        assert result.get("error") != "internal_error", result
        if product > 1000:
            assert result.get("error") == "pattern_too_complex", (pattern, product, result)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before <= GROWTH_KB


@pytest.fixture(scope="module")
def orchestrator_server(tmp_path_factory: pytest.TempPathFactory) -> FastMCP:
    from mcp_bridge.server import build_server
    from tests.conftest import settings_for

    return build_server(settings_for(Path(tmp_path_factory.mktemp("ade")) / "ade"), only="orchestrator")


# ---- MemoryError, RecursionError, OverflowError anywhere in a tool call: a structured refusal ---------------
def _exhausting_server() -> FastMCP:
    """A gateway-shaped server (the same error middleware) whose one tool runs out of what an input can
    exhaust: memory, recursion depth while parsing JSON, a number's range."""
    server = FastMCP("exhausting", middleware=[StructuredErrors()])

    @server.tool
    def exhaust(kind: str, size: int) -> int:
        if kind == "memory":
            return len(bytearray(size))
        if kind == "json":
            return len(json.loads("[" * size + "]" * size))
        return int(float(10**size))

    return server


@pytest.mark.parametrize(
    ("kind", "size"), [("memory", 1 << 60), ("memory", sys.maxsize), ("json", 200_000), ("number", 400)]
)
def test_resource_errors_are_resource_limit_refusals(kind: str, size: int) -> None:
    ok, error = call_tool(_exhausting_server(), "exhaust", {"kind": kind, "size": size})
    assert not ok and error["error"] == "resource_limit", error
    assert "Traceback" not in error["detail"] and error["hint"], error
