"""The `make demo` launcher (`python -m ade_platform.emulators.demo -- COMMAND`) leaves nothing running when it is
stopped by a supervisor's SIGTERM or a closed terminal's SIGHUP, and refuses to start on a port already taken."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ade_platform.emulators.demo import EMULATORS, free_port
from ade_platform.supervise import port_in_use

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not Path("/proc/self/environ").exists(), reason="finds leftovers through /proc (Linux)"
    ),
]

# The command the launcher runs: a process that starts one of its own, as `ade dev` starts `dagster dev`.
CHILD = textwrap.dedent(
    """
    import os, subprocess, sys, time
    grandchild = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with open(sys.argv[1], "w") as out:
        out.write(f"{os.getpid()} {grandchild.pid}")
    time.sleep(600)
    """
)


def _processes_with_home(home: Path) -> list[int]:
    """Every process whose environment carries this test's ADE_HOME: the launcher's descendants, nothing else."""
    marker = f"ADE_HOME={home}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and marker in environ.split(b"\0"):
            found.append(int(entry.name))
    return found


def _launch(home: Path, ports: dict[str, int], command: list[str], out: Path) -> subprocess.Popen:
    spec = ",".join(f"{name}={port}" for name, port in ports.items())
    with open(out, "w") as fh:
        return subprocess.Popen(
            [sys.executable, "-m", "ade_platform.emulators.demo", "--ports", spec, "--", *command],
            env={**os.environ, "ADE_HOME": str(home)},
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # as a supervisor starts it: signals reach it alone, not its children
        )


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_launcher_stops_everything_it_started(tmp_path: Path, stop_signal: int) -> None:
    home = tmp_path / "home"
    home.mkdir()
    ports = {e.name: free_port() for e in EMULATORS}
    pids_file = tmp_path / "pids"
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    launcher = _launch(home, ports, [sys.executable, str(script), str(pids_file)], tmp_path / "out")
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not pids_file.exists():
            assert launcher.poll() is None, (tmp_path / "out").read_text()[-3000:]
            time.sleep(0.2)
        assert pids_file.exists(), "the command never started"
        time.sleep(0.2)  # the pids are written before the file is closed
        child, grandchild = map(int, pids_file.read_text().split())
        running = _processes_with_home(home)
        assert child in running and grandchild in running
        # the launcher, each emulator, the command and its child
        assert len(running) >= 2 + len(EMULATORS) + 1
        assert all(port_in_use(port) for port in ports.values())

        launcher.send_signal(stop_signal)
        assert launcher.wait(timeout=90) == 130
        assert _processes_with_home(home) == []
        assert not [port for port in ports.values() if port_in_use(port)]
    finally:
        for pid in _processes_with_home(home):
            os.kill(pid, signal.SIGKILL)


def test_a_port_already_taken_is_named_and_nothing_starts(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    ports = {e.name: free_port() for e in EMULATORS}
    marker = tmp_path / "ran"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", ports["looker"]))
        holder.listen()
        launcher = _launch(
            home, ports, [sys.executable, "-c", f"open({str(marker)!r}, 'w')"], tmp_path / "out"
        )
        assert launcher.wait(timeout=60) == 2
    said = (tmp_path / "out").read_text()
    assert f"the looker emulator (port {ports['looker']}) already in use" in said
    assert "nothing was started" in said
    assert not marker.exists()
    assert _processes_with_home(home) == []
    assert not (home / "logs").exists()  # no emulator was started, not even the ones whose ports were free
