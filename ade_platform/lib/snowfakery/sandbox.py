"""Runs Snowfakery jobs in killable child processes (parent side).

A single zygote process per server (see `zygote.py`) keeps Snowfakery imported and warmed up, and a small
pool of pre-started job processes, each used for one job only (recycled after every run). `Sandbox.execute` writes the request into the run folder, asks the zygote for a child, then waits
for the child's result file, for the child to die, or for the timeout, whichever comes first. On timeout
the child's whole process group (its session, including any `dot` it started) is killed with SIGKILL.
The zygote gets a minimal environment, so no server secret is ever in a child's memory or environment.
POSIX only (fork, sessions, rlimits).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ade_platform.lib.snowfakery.errors import SnowfakeryError
from ade_platform.lib.snowfakery.worker import DOORBELL, REQUEST, RESULT

log = logging.getLogger("ade.snowfakery")
_START_TIMEOUT = 120.0
_CHECK_INTERVAL = 0.05  # how often a waiting parent checks that its job process is alive
_ENV_KEEP = ("PATH", "TZ", "LANG", "LC_ALL", "SYSTEMROOT")


@dataclass(frozen=True)
class JobOutcome:
    result: dict[str, Any]
    pid: int
    elapsed_seconds: float


class _Zygote:
    """The process that forks job children; restarted transparently when it dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._owner = 0  # the pid that started it: a forked copy of the server must start its own

    def _usable(self) -> bool:
        return self._proc is not None and self._owner == os.getpid() and self._proc.poll() is None

    def _start(self) -> subprocess.Popen[str]:
        package_parent = str(Path(__file__).resolve().parents[3])
        env = {key: os.environ[key] for key in _ENV_KEEP if key in os.environ}
        program = (
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from ade_platform.lib.snowfakery.zygote import main; main()"
        )
        # stderr goes to an unnamed file, read only to explain a failed start (the zygote keeps its handle)
        with tempfile.TemporaryFile() as errors:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", program, package_parent],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errors,
                env=env,
                cwd=os.path.abspath(os.sep),
                text=True,
                bufsize=1,
                start_new_session=True,
                close_fds=True,
            )
            ready = _read_line(proc, _START_TIMEOUT)
            if not ready or "ready" not in ready:
                proc.kill()
                errors.seek(0)
                detail = errors.read()[-2000:].decode(errors="replace")
                log.error("the snowfakery sandbox could not start: %s", detail)
                raise SnowfakeryError("internal_error", "the snowfakery sandbox could not start")
        self._owner = os.getpid()
        return proc

    def fork(self, request_path: Path) -> int:
        with self._lock:
            for attempt in (1, 2):
                if not self._usable():
                    self._proc = self._start()
                try:
                    assert self._proc.stdin is not None
                    self._proc.stdin.write(json.dumps({"request": str(request_path)}) + "\n")
                    self._proc.stdin.flush()
                    answer = _read_line(self._proc, 30.0)
                except (BrokenPipeError, OSError):
                    answer = None
                if answer and "pid" in answer:
                    return int(answer["pid"])
                self.stop_locked()
                if attempt == 2:
                    raise SnowfakeryError("internal_error", "the snowfakery sandbox did not start a run")
        raise AssertionError("unreachable")

    def warm(self) -> None:
        with self._lock:
            if not self._usable():
                self._proc = self._start()

    def stop_locked(self) -> None:
        if self._proc is not None and self._owner == os.getpid():
            if self._proc.poll() is None:
                self._proc.kill()
            self._proc.wait(timeout=10)
            for stream in (self._proc.stdin, self._proc.stdout):
                if stream is not None:
                    stream.close()
        self._proc = None

    def stop(self) -> None:
        with self._lock:
            self.stop_locked()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None


def _read_line(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any] | None:
    """One JSON line from the zygote, or None on EOF/timeout. Read from the pipe's descriptor with select (a
    thread per read cost ~1 ms of every job's hand-over); nothing else reads the zygote's stdout."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        data += chunk
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


_ZYGOTE = _Zygote()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_group(pid: int) -> None:
    """SIGKILL the child's process group (it leads its own session) and wait until it is gone."""
    for sender in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            sender(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


class Sandbox:
    """Executes job requests in fresh job processes of the shared zygote (one process per job)."""

    def warm(self) -> None:
        """Start the zygote now (it takes a few seconds to import Snowfakery)."""
        _ZYGOTE.warm()

    @staticmethod
    def zygote_pid() -> int | None:
        return _ZYGOTE.pid

    def execute(self, request: dict[str, Any], run_dir: Path, timeout: float) -> JobOutcome:
        """Run one job; raises SnowfakeryError run_timeout (after killing it) or internal_error."""
        request_path = run_dir / REQUEST
        result_path = run_dir / RESULT
        doorbell_path = run_dir / DOORBELL
        # The job rings the doorbell (a FIFO in its own run folder) once its result file is in place: the
        # answer follows at once instead of at the next poll. Opened read-write so that it never reads as
        # closed before the job opens it; the checks below still run at least every _CHECK_INTERVAL.
        doorbell = _open_doorbell(doorbell_path)
        try:
            ring = {"doorbell": str(doorbell_path)} if doorbell is not None else {}
            request_path.write_text(json.dumps({**request, **ring}))
            started = time.monotonic()
            pid = _ZYGOTE.fork(request_path)
            while True:
                if result_path.exists():
                    return JobOutcome(json.loads(result_path.read_text()), pid, time.monotonic() - started)
                elapsed = time.monotonic() - started
                if not alive(pid):
                    if result_path.exists():
                        continue
                    raise SnowfakeryError(
                        "run_failed",
                        "the run stopped without a result (it may have exceeded a memory or CPU limit)",
                        errors=[{"kind": "Crashed", "message": "the run process ended unexpectedly"}],
                    )
                if elapsed > timeout:
                    kill_group(pid)
                    raise SnowfakeryError(
                        "run_timeout",
                        f"the run was stopped after {timeout:g} s (snowfakery.timeout_seconds)",
                        timeout_seconds=timeout,
                    )
                wait = min(_CHECK_INTERVAL, timeout - elapsed + 0.001)
                if doorbell is None:
                    time.sleep(min(wait, 0.005))
                elif select.select([doorbell], [], [], wait)[0]:
                    with contextlib.suppress(BlockingIOError):
                        os.read(doorbell, 64)
        finally:
            if doorbell is not None:
                os.close(doorbell)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(doorbell_path)


def _open_doorbell(path: Path) -> int | None:
    """The read end of a new FIFO (None where the file system has no FIFOs: the parent then polls)."""
    try:
        os.mkfifo(path, 0o600)
        return os.open(path, os.O_RDWR | os.O_NONBLOCK)
    except OSError:
        return None
