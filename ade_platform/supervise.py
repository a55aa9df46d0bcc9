"""Child processes that leave nothing behind: the `make demo` launcher and `ade dev` start servers that start
servers of their own (`dagster dev` runs a webserver, a daemon and a code server). Each child is started in a
process group of its own and stopped as a group, so a supervisor's SIGTERM, a closed terminal's SIGHUP or Ctrl-C
stops every descendant, and a port is checked free before anything starts.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def stop_on_signals(ignore: bool = False) -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise KeyboardInterrupt in the main thread, so `finally` blocks stop children.
    Also when started from a shell that launched us with SIGINT ignored (background jobs of scripts are).
    `ignore`: the three are ignored instead (an orderly stop under way is not cut short by a second one)."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN if ignore else _interrupt) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def free_port() -> int:
    """A loopback port nothing listens on now (bound and released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something already listens on host:port (a bind would fail)."""
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def taken_ports(ports: Mapping[str, int], host: str = "127.0.0.1") -> list[str]:
    """`what (port N)` for each port of `ports` (what -> port) that is already in use."""
    return [f"{what} (port {port})" for what, port in ports.items() if port_in_use(port, host)]


def start_group(args: list[str], **popen: object) -> subprocess.Popen:
    """Start a child as the leader of a new process group (and session): the group is what `stop_group` stops."""
    return subprocess.Popen(args, start_new_session=True, **popen)  # type: ignore[call-overload]


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a member we may not signal still exists
        return True
    return True


def _signal_group(pgid: int, sig: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_groups(
    procs: Iterable[subprocess.Popen], sig: int = signal.SIGTERM, grace_seconds: float = 30
) -> None:
    """Send `sig` to each child's whole group, wait up to `grace_seconds` for every member of every group to exit
    (a leader that exits first may leave its children stopping), then SIGKILL whatever remains."""
    procs = list(procs)
    for proc in procs:
        _signal_group(proc.pid, sig)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        for proc in procs:
            proc.poll()  # reap the leader, or the group never empties
        if not any(_group_alive(proc.pid) for proc in procs):
            return
        time.sleep(0.1)
    for proc in procs:
        _signal_group(proc.pid, signal.SIGKILL)
    for proc in procs:
        with suppress(subprocess.TimeoutExpired):
            proc.wait(5)
