"""The bounded child process that compiles and runs agent patterns RE2 cannot (lookaround, backreferences,
verbose mode, the `regex` module's own syntax), so that no pattern can grow the gateway itself.

A backtracking engine's compile can expand nested counted repetitions into gigabytes, and its match can grow a
backtracking stack without end; a check that reads the pattern with another parser than the one that compiles it
can be fooled (a 47-character verbose-mode pattern once took a gateway from 124 MB to 5.5 GB). So both the check
and the work happen here, on `regex`'s own parse, in a process that sets its own limits before it reads a single
pattern: an address-space limit (RLIMIT_AS: an allocation past it is a MemoryError here, or the end of this
process, never the gateway's), a CPU limit per job (RLIMIT_CPU, past which the kernel ends it) and no core file.
The gateway adds a wall-clock deadline and kills the child on overrun (pattern_pool.py).

Per pattern: the static caps measured on `regex`'s parse (nested repetition product, expanded size: a clear
`pattern_too_complex` before anything is built), then compile, then the match over the whole log with `regex`'s
own timeout. MemoryError, RecursionError and OverflowError anywhere in that are `pattern_too_complex`.

Protocol over stdin/stdout, frames of a 4-byte big-endian length and UTF-8 JSON: a job
{"lines", "patterns", "timeout", "budget"}, then one answer per pattern, in order: {"error", "detail"} or
{"match_count", "matches", "truncated"} (plus "error": "pattern_timeout" when the time budget ran out).
"""

from __future__ import annotations

import json
import os
import resource
import struct
import sys
import time
from typing import Any, BinaryIO

from ade_platform.lib.orchestrators.pattern_listing import MAX_MATCHES_PER_PATTERN, Budget, chars, listed

MAX_REPEAT_PRODUCT = 1_000  # as RE2's own limit on nested counted repetitions
MAX_EXPANDED_SIZE = 20_000
MAX_DEPTH = 200
COMPILE_CPU_SECONDS = 2.0  # per pattern, on top of its matching budget, before the kernel ends the child


class Refused(Exception):
    def __init__(self, code: str, detail: str):
        super().__init__(code, detail)
        self.code, self.detail = code, detail


def frame(value: Any) -> bytes:
    body = json.dumps(value).encode()
    return struct.pack(">I", len(body)) + body


def _read_frame(stream: BinaryIO) -> Any:
    head = stream.read(4)
    if len(head) < 4:
        return None  # the gateway closed the pipe (it stopped): so does the child
    (size,) = struct.unpack(">I", head)
    return json.loads(stream.read(size))


def measure(pattern: str) -> tuple[int, int]:
    """(size with every counted repetition expanded, largest product of nested counted repetitions) on the
    parse `regex` itself compiles (its flags, verbose mode, inline and scoped flags, fuzzy constraints, sets,
    possessive quantifiers and all). Raises `regex.error` for a pattern it does not parse."""
    import regex
    from regex import _regex_core as core  # the parser regex.compile runs; read only, never changed

    flags = regex.VERSION0
    while True:  # as regex.compile does: a global flag found mid-pattern restarts the parse with it
        source = core.Source(pattern)
        info = core.Info(flags, source.char_type, {})
        source.ignore_space = bool(info.flags & regex.VERBOSE)
        try:
            parsed = core._parse_pattern(source, info)
            break
        except core._UnscopedFlagSet:
            flags = info.global_flags
    return _measure(parsed, core, 0)


def _measure(node: Any, core: Any, depth: int) -> tuple[int, int]:
    if depth > MAX_DEPTH:
        raise Refused("pattern_too_complex", "the pattern nests too deeply")
    size, product = 0, 1
    # Children by shape, not by node class: every attribute holding a node or a list of nodes (subpattern,
    # branches, items, yes_item, no_item...), so a node class this code does not name is still measured.
    for value in vars(node).values():
        children = value if isinstance(value, (list, tuple)) else [value]
        for child in children:
            if isinstance(child, core.RegexBase):
                inner, nested = _measure(child, core, depth + 1)
                size, product = size + inner, max(product, nested)
    if isinstance(node, core.String):
        size += len(node.characters)
    size = max(size, 1)
    if isinstance(node, core.GreedyRepeat):  # lazy and possessive repeats derive from it
        low, high = node.min_count, node.max_count
        count = max(1, low if high is None else high)  # unbounded: its minimum copies, then a loop
        return count * size, count * product
    return size, product


def compile_bounded(pattern: str) -> Any:
    """The compiled pattern, or Refused (invalid_regex, pattern_too_complex)."""
    import regex

    try:
        try:
            size, product = measure(pattern)
        except (
            AttributeError,
            ImportError,
        ):  # a `regex` release whose parser moved: the limits alone bound it
            size, product = 0, 1
        if product > MAX_REPEAT_PRODUCT or size > MAX_EXPANDED_SIZE:
            raise Refused(
                "pattern_too_complex",
                f"nested counted repetitions multiply to {product} (at most {MAX_REPEAT_PRODUCT}) and the "
                f"expanded pattern has {size} parts (at most {MAX_EXPANDED_SIZE})",
            )
        return regex.compile(pattern, flags=regex.VERSION0)
    except (regex.error, ValueError, TypeError, KeyError, IndexError) as exc:
        raise Refused("invalid_regex", str(exc)[:200]) from None


def scan(compiled: Any, lines: list[str], timeout: float, budget: Budget) -> dict[str, Any]:
    """The pattern's matches over the whole log, within one time budget (`regex`'s own timeout)."""
    matches: list[dict[str, Any]] = []
    count, truncated = 0, False
    deadline = time.monotonic() + timeout
    try:
        for number, line in enumerate(lines, start=1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            for found in compiled.finditer(line, timeout=remaining):
                count += 1
                if truncated or len(matches) >= MAX_MATCHES_PER_PATTERN:
                    truncated = True
                    continue
                groups = list(found.groups()) if compiled.groups else None
                match = listed(number, line, found.start(), found.group(0), groups)
                if not budget.take(chars(match)):
                    truncated = True
                    continue
                matches.append(match)
    except TimeoutError:
        return {
            "match_count": count,
            "error": "pattern_timeout",
            "detail": f"the pattern ran longer than {timeout} s and was stopped",
        }
    return {"match_count": count, "matches": matches, "truncated": truncated}


def answer(pattern: str, lines: list[str], timeout: float, budget: Budget) -> dict[str, Any]:
    try:
        return scan(compile_bounded(pattern), lines, timeout, budget)
    except Refused as exc:
        return {"match_count": 0, "error": exc.code, "detail": exc.detail}
    except MemoryError:
        return _too_complex("it needed more memory than the pattern engine may use")
    except (RecursionError, OverflowError):
        return _too_complex("it nests too deeply or counts too high")
    except Exception as exc:  # whatever else `regex` raises on a pattern, the child answers and lives on
        return {"match_count": 0, "error": "invalid_regex", "detail": f"{type(exc).__name__}: {exc}"[:200]}


def _too_complex(why: str) -> dict[str, Any]:
    return {"match_count": 0, "error": "pattern_too_complex", "detail": f"the pattern was stopped: {why}"}


def _limit_cpu(seconds: float) -> None:
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = used.ru_utime + used.ru_stime
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(spent + seconds) + 1
    resource.setrlimit(
        resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard)
    )


def main() -> None:
    memory = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    import regex  # noqa: F401  (loaded once, before any job, under the limit)

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while (job := _read_frame(stdin)) is not None:
        timeout = float(job["timeout"])
        _limit_cpu(len(job["patterns"]) * (timeout + COMPILE_CPU_SECONDS))
        budget = Budget(int(job["budget"]))
        for pattern in job["patterns"]:
            stdout.write(frame(answer(pattern, job["lines"], timeout, budget)))
            stdout.flush()
        del job
    os._exit(0)


if __name__ == "__main__":
    main()
