"""Runs Snowfakery jobs in killable child processes (parent side).

A single zygote process per server (see `zygote.py`) keeps Snowfakery imported and warmed up, and a small
pool of pre-started job processes, each used for one job only (recycled after every run). `Sandbox.execute` writes
the request into the run folder, hands its path to a waiting job process (`_Zygote.hand_over`), then waits
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
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ade_platform.lib import cancel
from ade_platform.lib.snowfakery.errors import SnowfakeryError
from ade_platform.lib.snowfakery.worker import DOORBELL, REQUEST, RESULT

log = logging.getLogger("ade.snowfakery")
_START_TIMEOUT = 120.0
_OFFER_TIMEOUT = 30.0  # longest a hand-over waits for the zygote to offer a job process
_HAND_OVER_TRIES = 4  # job processes (or zygote starts) a hand-over tries before it gives up
_CHECK_INTERVAL = 0.05  # how often a waiting parent checks that its job process is alive
_ENV_KEEP = ("PATH", "TZ", "LANG", "LC_ALL", "SYSTEMROOT")


@dataclass(frozen=True)
class JobOutcome:
    result: dict[str, Any]
    pid: int
    elapsed_seconds: float


class _Zygote:
    """The process that forks job processes; restarted transparently when it dies.

    The server hands a request straight to a waiting job process: the zygote passes the write end of each new
    job process's request pipe to the server over their socket (`{"job": pid}` with the descriptor), and the
    server, once it has used one, tells the zygote (`{"used": pid}`), which forks a replacement. The zygote is
    off the answer's path: a hand-over is one write to a pipe, with no round trip through another process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._channel: socket.socket | None = None
        self._waiting: deque[tuple[int, int]] = deque()  # (pid, request pipe) of job processes offered to us
        self._owner = 0  # the pid that started it: a forked copy of the server must start its own

    def _usable(self) -> bool:
        return self._proc is not None and self._owner == os.getpid() and self._proc.poll() is None

    def _start(self) -> None:
        package_parent = str(Path(__file__).resolve().parents[3])
        env = {key: os.environ[key] for key in _ENV_KEEP if key in os.environ}
        program = (
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "from ade_platform.lib.snowfakery.zygote import main; main()"
        )
        # one socket, the zygote's stdin and stdout: messages keep their boundaries and carry descriptors
        channel, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # stderr goes to an unnamed file, read only to explain a failed start (the zygote keeps its handle)
        with tempfile.TemporaryFile() as errors, theirs:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", program, package_parent],
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=errors,
                env=env,
                cwd=os.path.abspath(os.sep),
                start_new_session=True,
                close_fds=True,
            )
            theirs.close()
            ready = _receive(channel, _START_TIMEOUT)
            if ready is None or "ready" not in ready[0]:
                proc.kill()
                proc.wait(timeout=10)
                channel.close()
                errors.seek(0)
                detail = errors.read()[-2000:].decode(errors="replace")
                log.error("the snowfakery sandbox could not start: %s", detail)
                raise SnowfakeryError("internal_error", "the snowfakery sandbox could not start")
        self._proc, self._channel, self._owner = proc, channel, os.getpid()

    def hand_over(self, request_path: Path) -> int:
        """Give the request to a waiting job process; returns its pid."""
        line = (str(request_path) + "\n").encode()
        with self._lock:
            for _ in range(_HAND_OVER_TRIES):
                if not self._usable():
                    self.stop_locked()
                    self._start()
                job = self._next_job_locked()
                if job is None:  # no job process offered in time: start the zygote again
                    self.stop_locked()
                    continue
                pid, pipe = job
                try:
                    os.write(pipe, line)  # a few hundred bytes into an empty pipe: never blocks
                    handed = True
                except OSError:  # that job process died while it waited (killed from outside)
                    handed = False
                finally:
                    os.close(pipe)
                self._tell_used(pid)
                if handed:
                    return pid
        raise SnowfakeryError("internal_error", "the snowfakery sandbox did not start a run")

    def _next_job_locked(self) -> tuple[int, int] | None:
        """The longest-waiting job process offered so far (waiting for an offer only when none is left)."""
        assert self._channel is not None
        while True:
            offer = _receive(self._channel, 0 if self._waiting else _OFFER_TIMEOUT)
            if offer is None:
                break
            message, fds = offer
            if "job" in message and len(fds) == 1:
                self._waiting.append((int(message["job"]), fds[0]))
            else:
                for fd in fds:
                    os.close(fd)
        return self._waiting.popleft() if self._waiting else None

    def _tell_used(self, pid: int) -> None:
        """Let the zygote fork a replacement (if it is gone, the next hand-over starts a new one)."""
        with contextlib.suppress(OSError):
            assert self._channel is not None
            self._channel.send(json.dumps({"used": pid}).encode())

    def warm(self) -> None:
        with self._lock:
            if not self._usable():
                self.stop_locked()
                self._start()

    def stop_locked(self) -> None:
        if self._owner == os.getpid():
            if self._proc is not None:
                if self._proc.poll() is None:
                    self._proc.kill()
                self._proc.wait(timeout=10)
            if self._channel is not None:
                self._channel.close()
            while self._waiting:  # their job processes read end-of-file and exit
                os.close(self._waiting.popleft()[1])
        else:  # a forked copy of the server: these belong to the process that started the zygote
            self._waiting.clear()
        self._proc = self._channel = None

    def stop(self) -> None:
        with self._lock:
            self.stop_locked()

    def shutdown(self, timeout: float = 1.5) -> None:
        """The server's stop: close the channel, so the zygote stops every job process of its own (running or
        waiting) and exits; what is still there after `timeout` s is killed."""
        if self._owner != os.getpid() or self._proc is None:
            return
        proc = self._proc
        with contextlib.suppress(OSError):
            if self._channel is not None:
                self._channel.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
        with self._lock:
            self.stop_locked()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None


def _receive(channel: socket.socket, timeout: float) -> tuple[dict[str, Any], list[int]] | None:
    """One message from the zygote and the descriptors it carries, or None on end-of-file or timeout."""
    if not select.select([channel], [], [], timeout)[0]:
        return None
    try:
        data, fds, _, _ = socket.recv_fds(channel, 4096, 1)
    except OSError:
        return None
    for fd in fds:  # descriptors received this way are inheritable: no program the server starts gets one
        os.set_inheritable(fd, False)
    try:
        message = json.loads(data) if data else None
    except ValueError:
        message = None
    if not isinstance(message, dict):
        for fd in fds:
            os.close(fd)
        return None
    return message, list(fds)


_ZYGOTE = _Zygote()
_RUNNING: set[int] = set()  # job processes running a job for this server


def shutdown() -> None:
    """Stop every process of the sandbox now (the gateway is stopping): running jobs first, then the zygote and
    its waiting job processes."""
    for pid in list(_RUNNING):
        kill_group(pid)
    _ZYGOTE.shutdown()


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

    def execute(
        self,
        request: dict[str, Any],
        run_dir: Path,
        timeout: float,
        meanwhile: Callable[[], None] | None = None,
    ) -> JobOutcome:
        """Run one job; raises SnowfakeryError run_timeout (after killing it) or internal_error. `meanwhile` is
        called once the job has its request, while it runs (work of the caller's own, with no thread to start)."""
        request_path = run_dir / REQUEST
        result_path = run_dir / RESULT
        doorbell_path = run_dir / DOORBELL
        # The job rings the doorbell (a FIFO in its own run folder) once its result file is in place: the
        # answer follows at once instead of at the next poll. Opened read-write so that it never reads as
        # closed before the job opens it; the checks below still run at least every _CHECK_INTERVAL.
        doorbell = _open_doorbell(doorbell_path)
        pid: int | None = None
        try:
            ring = {"doorbell": str(doorbell_path)} if doorbell is not None else {}
            request_path.write_text(json.dumps({**request, **ring}))
            started = time.monotonic()
            pid = _ZYGOTE.hand_over(request_path)
            _RUNNING.add(pid)
            if meanwhile is not None:
                meanwhile()
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
                if cancel.requested():  # the caller cancelled (a task, or a plain call's cancellation)
                    kill_group(pid)
                    raise SnowfakeryError(
                        "cancelled",
                        f"the run was cancelled by its caller after {elapsed:.1f} s; its job was stopped",
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
            _RUNNING.discard(pid or 0)
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
