"""Faults made real: `ade mcp` processes on a copy of a materialized demo home, stopped and killed as an operator's
machine would (SIGTERM from a service manager, a host closing stdin, kill -9), and what the Dagster instance holds
afterwards counted: answered calls, their recorded runs, lost, stuck, and the time to recover.

Run as a script to print the table for a home (`python -m tests.faults.harness HOME [--code DIR]`; `--code`
starts the gateways from another checkout, to measure a version before a change with the same script).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

REPO_ROOT = Path(__file__).resolve().parents[2]
READ_SQL = "select 1 as one"
# Long enough to be stopped while it runs (seconds of Faker rows), bounded by snowfakery.timeout_seconds.
SLOW_RECIPE = """
- object: row
  count: 60000
  fields:
    name: ${{ fake.first_name }} ${{ fake.last_name }}
    email:
      fake: email
"""
_LIVE = ("NOT_STARTED", "QUEUED", "STARTING", "STARTED", "CANCELING")


@dataclass
class Tally:
    """What one fault left behind."""

    fault: str
    answered: int = 0
    recorded: int = 0  # answered calls whose run is in the instance and finished
    lost: int = 0  # answered calls with no finished run
    wrong: int = 0  # answered successfully, recorded as something else
    stuck: int = 0  # audit runs left unfinished
    extra: int = 0  # audit runs of the fault's tool beyond the answered calls (duplicates, unknowns)
    exit_s: float | None = None  # stop signal -> gateway exited
    recover_s: float | None = None  # next gateway started -> every answered call recorded (None: not needed)
    notes: list[str] = field(default_factory=list)

    def row(self) -> str:
        def fmt(v: float | None) -> str:
            return "-" if v is None else f"{v:.1f}"

        return (
            f"{self.fault:<34} {self.answered:>8} {self.recorded:>8} {self.lost:>5} {self.wrong:>5} "
            f"{self.stuck:>5} {self.extra:>5} {fmt(self.exit_s):>7} {fmt(self.recover_s):>9}  {'; '.join(self.notes)}"
        )


HEADER = (
    f"{'fault':<34} {'answered':>8} {'recorded':>8} {'lost':>5} {'wrong':>5} {'stuck':>5} {'extra':>5} "
    f"{'exit_s':>7} {'recover_s':>9}  notes"
)


class Home:
    """A private copy of a materialized demo home, and how to start gateways on it."""

    def __init__(self, source: Path, target: Path, code: Path | None = None):
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("logs", "*.lock"))
        self.path = target
        self.dagster_home = target / "dagster"
        self.code = code
        self.env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
        self.env.update(ADE_HOME=str(target), ADE_CONFIG=str((code or REPO_ROOT) / "ade.yaml"))
        if code is not None:
            self.env["PYTHONPATH"] = str(code)
        # the copied instance already holds the runs of whatever tests used the source home before this one:
        # they are not this fault's, so every count leaves them out
        self.before = self._run_ids()

    def _run_ids(self) -> frozenset[str]:
        from dagster import DagsterInstance

        if not self.dagster_home.is_dir():
            return frozenset()
        with DagsterInstance.from_config(str(self.dagster_home)) as instance:
            return frozenset(instance.get_run_ids())

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "ade_platform.cli", *args]

    def start(self, *args: str, stdin: Any = subprocess.PIPE) -> subprocess.Popen[bytes]:
        log = open(self.path / f"gateway-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115 (the child keeps it)
        return subprocess.Popen(
            self.command("mcp", *args),
            stdin=stdin,
            stdout=subprocess.PIPE if stdin is subprocess.PIPE else subprocess.DEVNULL,
            stderr=log,
            env=self.env,
            cwd=str(self.code or REPO_ROOT),
        )

    # ---- what the instance holds --------------------------------------------------------------------
    def runs(self, tool: str) -> list[Any]:
        from dagster import DagsterInstance, RunsFilter

        with DagsterInstance.from_config(str(self.dagster_home)) as instance:
            runs = instance.get_runs(RunsFilter(tags={"ade/tool": tool}))
        return [r for r in runs if r.run_id not in self.before]

    def tally(self, t: Tally, tool: str, answered: list[str]) -> Tally:
        runs = {r.run_id: r for r in self.runs(tool)}
        t.answered = len(answered)
        done = [runs[i] for i in answered if i in runs and runs[i].status.value not in _LIVE]
        t.recorded = len(done)
        t.lost = t.answered - t.recorded
        t.wrong = sum(1 for r in done if r.status.value != "SUCCESS")
        t.stuck = sum(1 for r in runs.values() if r.status.value in _LIVE)
        t.extra = len(set(runs) - set(answered))
        return t

    def wait_recorded(self, tool: str, answered: list[str], timeout: float) -> float | None:
        """Seconds until every answered call's run is finished (None when that did not happen in time)."""
        started = time.monotonic()
        while time.monotonic() - started < timeout:
            runs = {r.run_id: r for r in self.runs(tool)}
            if all(i in runs and runs[i].status.value not in _LIVE for i in answered):
                return time.monotonic() - started
            time.sleep(0.25)
        return None


class Stdio:
    """A gateway over stdio spoken to in raw JSON-RPC lines, so it can be stopped between any two messages."""

    def __init__(self, home: Home):
        self.proc = home.start()
        self._id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "faults", "version": "0"}})  # fmt: skip
        self.notify("notifications/initialized")

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self._send({"jsonrpc": "2.0", "method": method, **({"params": params} if params else {})})

    def send_call(self, tool: str, arguments: dict[str, Any]) -> int:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments}})  # fmt: skip
        return self._id

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        return self.reply(self._id)

    def reply(self, wanted: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise EOFError("the gateway closed its output")
            message = json.loads(line)
            if message.get("id") == wanted:
                return message

    def call(self, tool: str, arguments: dict[str, Any]) -> str | None:
        """The run id of a successful answer (None for an error answer)."""
        return run_id_of(self.reply(self.send_call(tool, arguments)))

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()


class Http:
    """A gateway over HTTP (streamable HTTP, one session) on a free loopback port."""

    def __init__(self, home: Home):
        from ade_platform.emulators.demo import free_port

        self.port = free_port()
        self.proc = home.start("--transport", "http", "--port", str(self.port), stdin=subprocess.DEVNULL)
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.client = httpx.Client(timeout=60)
        self.headers = {"Accept": "application/json, text/event-stream"}
        deadline = time.monotonic() + 90
        while True:
            assert self.proc.poll() is None, "the HTTP gateway exited"
            try:
                reply = self._post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                               "clientInfo": {"name": "faults", "version": "0"}}})  # fmt: skip
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the HTTP gateway did not answer"
                time.sleep(0.3)
        session = reply.headers.get("mcp-session-id")
        if session:
            self.headers["mcp-session-id"] = session
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self._id = 0

    def call(self, tool: str, arguments: dict[str, Any]) -> str | None:
        self._id += 1
        reply = self._post({"jsonrpc": "2.0", "id": self._id, "method": "tools/call",
                            "params": {"name": tool, "arguments": arguments}})  # fmt: skip
        for line in reply.text.splitlines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("id") == self._id:
                    return run_id_of(message)
        with contextlib.suppress(ValueError):
            return run_id_of(reply.json())
        return None

    def _post(self, body: dict[str, Any]) -> httpx.Response:
        return self.client.post(self.url, json=body, headers=self.headers)


def run_id_of(message: dict[str, Any]) -> str | None:
    result = message.get("result") or {}
    if result.get("isError"):
        return None
    content = result.get("structuredContent") or {}
    return (content.get("provenance") or {}).get("run_id")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 60) -> float | None:
    """Send `sig`; seconds until the process exited (None: it did not, and was killed)."""
    started = time.monotonic()
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return None
    return time.monotonic() - started


def children(pid: int) -> list[int]:
    """Direct children of `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError):
                stat = (entry / "stat").read_text()
                if int(stat.rpartition(")")[2].split()[1]) == pid:
                    found.append(int(entry.name))
    return found


def cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes()).replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def snowfakery_processes(gateway: int) -> list[int]:
    """The sandbox's zygote under `gateway` and its job processes."""
    zygotes = [p for p in children(gateway) if "snowfakery.zygote" in cmdline(p)]
    return zygotes + [job for z in zygotes for job in children(z)]


def audit_worker(gateway: int) -> int | None:
    return next((p for p in children(gateway) if "audit_worker" in cmdline(p)), None)


def wait_gone(pids: list[int], timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if not any(alive(p) for p in pids):
            return time.monotonic() - started
        time.sleep(0.05)
    return None


# ---- the faults ----------------------------------------------------------------------------------------
def sigterm_after_reads(home: Home, transport: str, n: int = 8) -> Tally:
    t = Tally(f"SIGTERM after {n} reads ({transport})")
    gateway = Stdio(home) if transport == "stdio" else Http(home)
    answered = [r for r in (gateway.call("warehouse_execute", {"sql": READ_SQL}) for _ in range(n)) if r]
    t.exit_s = stop(gateway.proc, signal.SIGTERM)
    home.tally(t, "warehouse_execute", answered)
    if t.lost or t.stuck:
        t.notes.append(f"at exit: lost {t.lost}, stuck {t.stuck}")
        t.recover_s = restart_and_wait(home, "warehouse_execute", answered)
        home.tally(t, "warehouse_execute", answered)
    return t


def many_reads_then_stop(home: Home, n: int = 300) -> Tally:
    """A host's graceful stop of a stdio server: it closes the server's stdin, and waits."""
    t = Tally(f"{n} reads, then stdin closed (stdio)")
    gateway = Stdio(home)
    answered: list[str] = []
    window = 1  # one call at a time: with several in flight the DuckDB reads stall (see the closing note)
    for start in range(0, n, window):
        ids = [
            gateway.send_call("warehouse_execute", {"sql": READ_SQL}) for _ in range(min(window, n - start))
        ]
        answered += [r for r in (run_id_of(gateway.reply(i)) for i in ids) if r]
    assert gateway.proc.stdin is not None
    started = time.monotonic()
    gateway.proc.stdin.close()
    try:
        gateway.proc.wait(timeout=120)
        t.exit_s = time.monotonic() - started
    except subprocess.TimeoutExpired:
        stop(gateway.proc, signal.SIGKILL)
    home.tally(t, "warehouse_execute", answered)
    if t.lost or t.stuck:
        t.notes.append(f"at exit: lost {t.lost}, stuck {t.stuck}")
        t.recover_s = restart_and_wait(home, "warehouse_execute", answered)
        home.tally(t, "warehouse_execute", answered)
    return t


def kill_audit_worker(home: Home, n: int = 20) -> Tally:
    t = Tally(f"kill -9 audit worker after {n} reads")
    gateway = Stdio(home)
    answered = [r for r in (gateway.call("warehouse_execute", {"sql": READ_SQL}) for _ in range(n)) if r]
    worker = audit_worker(gateway.proc.pid)
    if worker is None:
        t.notes.append("no audit worker process found")
    else:
        os.kill(worker, signal.SIGKILL)
    # the gateway goes on serving; a few more calls after the worker died
    answered += [r for r in (gateway.call("warehouse_execute", {"sql": READ_SQL}) for _ in range(5)) if r]
    t.exit_s = stop(gateway.proc, signal.SIGTERM)
    home.tally(t, "warehouse_execute", answered)
    t.notes.append(f"at exit: lost {t.lost}, stuck {t.stuck}")
    t.recover_s = restart_and_wait(home, "warehouse_execute", answered)
    return home.tally(t, "warehouse_execute", answered)


def kill_gateway_mid_workspace_call(home: Home) -> Tally:
    """kill -9 while a Snowfakery run (a workspace call) runs: the next gateway's start records it as unknown."""
    t = Tally("kill -9 gateway mid workspace call")
    gateway = Stdio(home)
    gateway.send_call("snowfakery.run_recipe", {"recipe_text": SLOW_RECIPE, "output_format": "json",
                                                "capture_output": False})  # fmt: skip
    jobs = wait_for_job(gateway.proc.pid, 60)
    stop(gateway.proc, signal.SIGKILL)
    gone = wait_gone(jobs, 30)
    t.notes.append(f"job processes gone after {'>30' if gone is None else f'{gone:.1f}'} s")
    started = time.monotonic()
    nxt = Stdio(home)  # starts, and is asked nothing live
    recovered = None
    while time.monotonic() - started < 300:
        runs = home.runs("snowfakery.run_recipe")
        if any(r.status.value == "FAILURE" and r.tags.get("ade/outcome") == "unknown" for r in runs):
            recovered = time.monotonic() - started
            break
        time.sleep(0.25)
    stop(nxt.proc, signal.SIGTERM)
    runs = home.runs("snowfakery.run_recipe")
    t.recover_s = recovered
    t.stuck = sum(1 for r in runs if r.status.value in _LIVE)
    t.extra = len(runs)
    t.lost = 0 if recovered is not None else 1
    t.notes.append(
        "interrupted call recorded as unknown" if recovered is not None else "interrupted call not recorded"
    )
    return t


def stop_during_snowfakery_run(home: Home) -> Tally:
    """SIGTERM while a Snowfakery job runs: how long its processes outlive the gateway."""
    t = Tally("SIGTERM mid Snowfakery run")
    gateway = Stdio(home)
    gateway.send_call("snowfakery.run_recipe", {"recipe_text": SLOW_RECIPE, "output_format": "json",
                                                "capture_output": False})  # fmt: skip
    pid = gateway.proc.pid
    jobs = wait_for_job(pid, 60)
    t.exit_s = stop(gateway.proc, signal.SIGTERM)
    gone = wait_gone(jobs, 30)
    t.notes.append(f"sandbox processes gone {'>30' if gone is None else f'{gone:.1f}'} s after exit")
    t.recover_s = gone
    return t


def wait_for_job(gateway: int, timeout: float) -> list[int]:
    """The sandbox's processes once a job process is busy (its zygote has more children than its pool)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = snowfakery_processes(gateway)
        if len(found) >= 2:
            time.sleep(1.0)  # the job is under way
            return snowfakery_processes(gateway)
        time.sleep(0.1)
    raise AssertionError("no Snowfakery job process started")


def restart_and_wait(home: Home, tool: str, answered: list[str], timeout: float = 300) -> float | None:
    """Start the next gateway (asked nothing live) and time how long until every answered call is recorded."""
    nxt = Stdio(home)
    try:
        return home.wait_recorded(tool, answered, timeout)
    finally:
        stop(nxt.proc, signal.SIGTERM)


FAULTS = {
    "sigterm_stdio": lambda h: sigterm_after_reads(h, "stdio"),
    "sigterm_http": lambda h: sigterm_after_reads(h, "http"),
    "kill_worker": kill_audit_worker,
    "kill_gateway_workspace": kill_gateway_mid_workspace_call,
    "sigterm_snowfakery": stop_during_snowfakery_run,
    "many_reads": many_reads_then_stop,
}


@contextlib.contextmanager
def home_copy(source: Path, scratch: Path, code: Path | None = None) -> Iterator[Home]:
    target = scratch / f"home-{time.monotonic_ns()}"
    home = Home(source, target, code)
    try:
        yield home
    finally:
        shutil.rmtree(target, ignore_errors=True)


def main(argv: list[str]) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser()
    parser.add_argument("home", type=Path, help="a materialized demo home (ADE_HOME)")
    parser.add_argument("--code", type=Path, help="start the gateways from this checkout")
    parser.add_argument("--only", nargs="*", choices=list(FAULTS))
    args = parser.parse_args(argv)
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as scratch:
        for name in args.only or list(FAULTS):
            with home_copy(args.home, Path(scratch), args.code) as home:
                try:
                    tally = FAULTS[name](home)
                except Exception as exc:  # a fault the harness could not drive is a row too
                    tally = Tally(name, notes=[f"harness: {type(exc).__name__}: {exc}"])
                print(tally.row(), flush=True)
                print(json.dumps(asdict(tally)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
