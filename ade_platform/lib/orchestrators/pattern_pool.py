"""The gateway's side of the bounded pattern child (pattern_child.py): a small pool of long-lived child processes
that compile and run the `regex` fallback, each under its own memory and CPU limits, with a wall-clock deadline
per pattern past which the gateway kills it.

A child per call would cost a Python start (~50 ms) each time; a long-lived child costs ~25 MB while idle and is
replaced when it dies (a pattern that overran its limits ends only its child). The compiled pattern never comes
back (it cannot be sent across processes), so the whole match over the log runs in the child and only the listed
matches, already capped, come back. The log is sent once per call, with every fallback pattern of the call.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ade_platform.lib.orchestrators.pattern_child import frame

CHILD_MEMORY_BYTES = (
    256 << 20
)  # address space: an idle child maps ~30 MB, a 2 MB log and its lines ~60 MB more
MAX_CHILDREN = 2  # concurrent fallback calls beyond this wait for a child
START_SECONDS = 10.0  # a child's start (Python and `regex`) on a loaded machine, before its first answer
GRACE_SECONDS = 5.0  # per pattern, past its matching budget: compile, listing, scheduling
_ROOT = Path(__file__).resolve().parents[3]  # what holds the ade_platform package the child imports
_CHILD = (
    f"import sys; sys.path.insert(0, {str(_ROOT)!r}); "
    "from ade_platform.lib.orchestrators.pattern_child import main; main()"
)


class _Child:
    def __init__(self) -> None:
        # -I: no environment variable, user site or current directory decides what the child imports.
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", _CHILD, str(CHILD_MEMORY_BYTES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            close_fds=True,
            env={},  # it needs none, and the gateway's (credentials included) is none of its business
        )
        self.fresh = True

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.alive():
            self.process.kill()
        self.process.wait()

    def close(self) -> None:
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()  # the child reads end-of-file and exits
            self.process.wait(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()

    def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        view = memoryview(data)
        while view:
            written = os.write(self.process.stdin.fileno(), view)
            view = view[written:]

    def receive(self, deadline: float) -> Any | None:
        """The child's next answer; None when it died or did not answer by the deadline (it is then killed)."""
        assert self.process.stdout is not None
        head = self._read(4, deadline)
        body = self._read(struct.unpack(">I", head)[0], deadline) if head is not None else None
        if body is None:
            self.kill()
            return None
        self.fresh = False
        return json.loads(body)

    def _read(self, size: int, deadline: float) -> bytes | None:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        chunks: list[bytes] = []
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while size > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    return None
                chunk = os.read(fd, min(size, 1 << 20))
                if not chunk:
                    return None  # the child is gone
                chunks.append(chunk)
                size -= len(chunk)
        return b"".join(chunks)


class _Pool:
    def __init__(self, size: int) -> None:
        self.size = size
        self.idle: list[_Child] = []
        self.started = 0
        self.lock = threading.Condition()

    def acquire(self) -> _Child:
        with self.lock:
            while True:
                while self.idle:
                    child = self.idle.pop()
                    if child.alive():
                        return child
                    child.kill()
                    self.started -= 1
                if self.started < self.size:
                    self.started += 1
                    break
                self.lock.wait()
        try:
            return _Child()
        except BaseException:
            self.release(None)
            raise

    def release(self, child: _Child | None) -> None:
        with self.lock:
            if child is not None and child.alive():
                self.idle.append(child)
            else:
                if child is not None:
                    child.kill()
                self.started -= 1
            self.lock.notify()

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
            self.started -= len(idle)
        for child in idle:
            child.close()


_POOL = _Pool(MAX_CHILDREN)
atexit.register(_POOL.close)


def run_in_child(lines: list[str], patterns: list[str], timeout: float, budget: int) -> list[dict[str, Any]]:
    """One answer per pattern, in order (see pattern_child.answer); a pattern whose child overran its memory,
    CPU or wall-clock bound, or died, is `pattern_too_complex`, and the patterns after it go to a new child."""
    answers: list[dict[str, Any]] = []
    attempts = 0
    while len(answers) < len(patterns):
        pending = patterns[len(answers) :]
        try:
            child = _POOL.acquire()
        except (
            OSError
        ):  # no process could be started (out of processes or descriptors): refused, not run here
            answers.extend(_refused("the bounded pattern engine could not be started") for _ in pending)
            break
        try:
            try:
                child.send(frame({"lines": lines, "patterns": pending, "timeout": timeout, "budget": budget}))
            except OSError:  # it died before reading the job: one more child, then the patterns are refused
                child.kill()
                attempts += 1
                if attempts < 2:
                    continue
                answers.extend(_refused("the bounded pattern engine could not be started") for _ in pending)
                break
            for number in range(len(pending)):
                extra = START_SECONDS if child.fresh and number == 0 else 0.0
                answer = child.receive(time.monotonic() + timeout + GRACE_SECONDS + extra)
                if answer is None:
                    answers.append(_refused("it exceeded the pattern engine's memory or time bound and was stopped"))  # fmt: skip
                    break
                answers.append(answer)
        finally:
            _POOL.release(child)
    return answers


def _refused(why: str) -> dict[str, Any]:
    return {"match_count": 0, "error": "pattern_too_complex", "detail": f"the pattern was stopped: {why}"}
