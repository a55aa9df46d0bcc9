"""The sandbox's zygote: a long-lived process with Snowfakery imported and warmed up, keeping a small pool of
pre-started job processes, each used for one job only.

Started by `sandbox.Sandbox` with a minimal environment and no terminal; its stdin and stdout are one Unix
socket (SOCK_SEQPACKET: one JSON object per message). It answers {"ready": <pid>} once warm, then offers each
job process it forks to the server: {"job": <pid>} carrying the write end of that process's request pipe, which
the zygote then closes (the server holds the only one). The server writes a request path into one such pipe and
sends {"used": <pid>}; the zygote forks a replacement and offers it. A job hand-over thus never waits for the
zygote, and the next job does not wait for a fork either.

A job process is forked before its job is known: it leads its own session (the parent kills its whole process
group on timeout), closes every descriptor but its own request pipe (it cannot reach the zygote's protocol nor
another job process's pipe), warms itself up (`_prepare_job_process`) and blocks reading one request path. It then runs `worker.run_job`, which applies
that request's limits, environment and audit hook before any recipe code runs, writes the result next to the
request and exits: no process ever runs a second job, so nothing one recipe does can reach the next. If the
server closes a request pipe (it stops, or starts a new zygote), that job process reads end-of-file and exits.

Importing Snowfakery takes seconds and a first recipe pays for lazy set-up (Faker providers, Jinja's lexer,
Snowfakery's validators); the zygote pays both once, by running a tiny recipe before it forks anything, and
every job process inherits the result. The zygote ignores SIGCHLD, so finished job processes are reaped at once
and `os.kill(pid, 0)` tells the parent a job process is gone.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import socket
import sys
import time
from typing import Any

POOL_SIZE = 2  # job processes waiting at any time: one for the next job, one already forking behind it
_REPLACED_JOB_WAIT = 10.0  # longest a replacement waits for the job it replaces to end before it warms up
_POOL_WARM_TIMEOUT = 30.0  # at start-up, the longest the zygote waits for its first job processes to be warm
_WARM_UP_RECIPE = """
- object: warm_up
  count: 3
  fields:
    name: ${{ fake.first_name }} ${{ fake.last_name }}
    email:
      fake: email
    since:
      date_between:
        start_date: -5y
        end_date: today
    amount: ${{ random_number(min=5, max=500) }}
    status:
      random_choice: [a, b]
  friends:
    - object: warm_up_child
      fields:
        parent:
          reference: warm_up
"""


def _preload() -> None:
    import encodings.unicode_escape  # noqa: F401  (first used by a recipe's escapes: imported in every job)

    import faker
    import snowfakery.api
    import snowfakery.data_generator
    import snowfakery.output_streams
    import snowfakery.standard_plugins.datasets  # noqa: F401

    # everything a job process imports (the zygote runs with -B: an import not done here is compiled from
    # source in every job, ~9 ms for guard and policy)
    from ade_platform.lib.snowfakery import guard, policy, quiet, worker  # noqa: F401

    faker.Faker().name()  # loads the default locale's providers once, for every child


def _warm_up(validate_only: bool = False) -> None:
    """Validate a tiny recipe and generate its rows in memory (or only validate it): what a first recipe sets up
    lazily is then set up."""
    import io

    from snowfakery.api import generate_data

    from ade_platform.lib.snowfakery import cyaml
    from ade_platform.lib.snowfakery.quiet import QuietApplication
    from ade_platform.lib.snowfakery.worker import NamedText

    # A warm-up is an optimisation: should it fail, a job process runs the same, only colder. A validation reads
    # the recipe with libyaml (worker._validate): so does the warm-up of one.
    reader = cyaml.c_parsed_recipes() if validate_only else contextlib.nullcontext()
    with contextlib.suppress(Exception), reader:
        generate_data(
            NamedText(_WARM_UP_RECIPE, "warm_up.recipe.yml"),
            parent_application=QuietApplication(),
            output_format="txt",
            output_file=io.StringIO(),
            validate_only=validate_only,
            strict_mode=True,  # the validator's first use costs too (runs validate by default)
        )


def _prepare_job_process(requests: int) -> None:
    """What a fresh process pays on its first recipe, paid while it waits for one (off the answer's path), in
    three steps: a request that arrives meanwhile waits for the current step only, and its job then runs with
    what is ready (colder, never wrong).

    A forked process first touching the zygote's objects copies their memory pages, and its first recipe sets
    up lazily what the zygote's warm-up set up only in the zygote's own pages: validating the warm-up recipe
    again here halves the time a job then spends (measured 60 -> 27 ms for Snowfakery's validator on upstream
    examples). Only validating it, not generating its rows too, costs a third less CPU (14 against 21 ms,
    spent beside the next calls when they come back to back) and leaves validations as fast (job CPU 5.6-6.8
    ms either way); a run pays the rest of its first generation itself. Snowfakery also builds a new Faker (26
    providers, ~5 ms for both on a quiet machine) for its validator and one for generating: both are built
    here, each handed out once (`_PrebuiltFaker`).
    """
    _warm_up(validate_only=True)
    import snowfakery.fakedata.fake_data_generator as generator
    import snowfakery.recipe_validator as validator

    for module, call in ((validator, ((), {})), (generator, ((None,), {"use_weighting": False}))):
        if _request_waiting(requests):
            return
        with contextlib.suppress(Exception):  # an optimisation too: without it a job builds its own
            module.Faker = _PrebuiltFaker(module.Faker, call)  # type: ignore[attr-defined]


def _request_waiting(requests: int) -> bool:
    return bool(select.select([requests], [], [], 0)[0])


class _PrebuiltFaker:
    """Stands in for `faker.Faker` in one Snowfakery module: the first call with the arguments it was built for
    gets the instance built in advance (a job process runs one recipe, so it is never shared); any other call
    builds a new one, as Faker itself would."""

    def __init__(self, faker_class: Any, call: tuple[tuple[Any, ...], dict[str, Any]]) -> None:
        self._class = faker_class
        self._call = call
        self._ready: Any = faker_class(*call[0], **call[1])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._ready is not None and (args, kwargs) == self._call:
            ready, self._ready = self._ready, None
            return ready
        return self._class(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # Faker.seed and other class attributes
        return getattr(self._class, name)


def _start_job_process(announce: bool = False, after: int | None = None) -> tuple[int, int, int | None]:
    """Fork a job process waiting for its request; returns (pid, the write end of its request pipe, and with
    `announce` the read end of a pipe on which it says when it is warm). A replacement for the job process `after`
    warms itself up once that one is done."""
    read_end, write_end = os.pipe()
    warm_read, warm_write = os.pipe() if announce else (None, None)
    pid = os.fork()
    if pid == 0:
        _job_process(read_end, warm_write, after)
    os.close(read_end)
    if warm_write is not None:
        os.close(warm_write)
    return pid, write_end, warm_read


def _job_process(read_end: int, warm_write: int | None, after: int | None) -> None:
    code = 1
    try:
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the job waits for its own subprocesses (dot)
        # every descriptor but its own pipes: not the protocol, nor any other job process's pipe
        low = 3
        for fd in sorted(f for f in (read_end, warm_write) if f is not None):
            os.closerange(low, fd)
            low = fd + 1
        os.closerange(low, os.sysconf("SC_OPEN_MAX"))
        from faker import Faker

        # Faker draws from one module-level Random that a fork copies as it is (Python reseeds only its own
        # `random` after a fork): without this every job process would generate the same names (a seeded run
        # reseeds it again).
        Faker.seed()
        # A replacement is forked while the job it replaces runs: it warms up once that job is done, so as not
        # to take its CPU, and not at all when a request comes first (it then runs at once, only colder).
        if after is None or _idle_after(after, read_end):
            _prepare_job_process(read_end)
        if warm_write is not None:
            with contextlib.suppress(OSError):
                os.write(warm_write, b"1")
            os.close(warm_write)
        with os.fdopen(read_end, "r", encoding="utf-8") as requests:
            request_path = requests.readline().strip()
        if request_path:
            from ade_platform.lib.snowfakery.worker import run_job

            run_job(request_path)
            code = 0
    finally:
        os._exit(code)


def _idle_after(pid: int, requests: int) -> bool:
    """Wait until job process `pid` has ended; False if a request arrives first (or it runs too long)."""
    deadline = time.monotonic() + _REPLACED_JOB_WAIT
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        if select.select([requests], [], [], 0.005)[0]:
            return False
    return False


def _wait_until_warm(announcements: list[int], timeout: float = _POOL_WARM_TIMEOUT) -> None:
    """Wait (bounded) for the first job processes to be warm: the server is ready when its first call is fast."""
    deadline = time.monotonic() + timeout
    for fd in announcements:
        with contextlib.suppress(OSError):
            if select.select([fd], [], [], max(deadline - time.monotonic(), 0))[0]:
                os.read(fd, 1)
        os.close(fd)


def main() -> None:
    channel = socket.socket(fileno=os.dup(0))  # stdin and stdout are both the server's socket
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)  # nothing the zygote or a child prints can reach the protocol
    _preload()
    _warm_up()
    # What the zygote holds now is shared, read-mostly, by every job process: keep it out of their garbage
    # collections (which would otherwise walk, and so copy, all of it once per job).
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    jobs: set[int] = set()
    try:
        first = [_start_job_process(announce=True) for _ in range(POOL_SIZE)]
        jobs.update(pid for pid, _, _ in first)
        _wait_until_warm([warm for _, _, warm in first if warm is not None])
        channel.send(json.dumps({"ready": os.getpid()}).encode())
        for pid, pipe, _ in first:
            _offer(channel, pid, pipe)
        while message := channel.recv(4096):
            try:
                used = json.loads(message)["used"]
                if not isinstance(used, int) or isinstance(used, bool):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                continue
            pid, pipe, _ = _start_job_process(after=used)  # forks while that job runs, warms up after it
            jobs.add(pid)
            _offer(channel, pid, pipe)
    finally:
        # The server closed its end (it stopped, or died: even a kill -9 of the gateway closes it) or stopped
        # us: no job process outlives it, running or waiting, nor anything a job started (its session).
        _stop_jobs(jobs)
    sys.exit(0)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _stop_jobs(jobs: set[int]) -> None:
    """SIGKILL the process group of every job process of ours still alive (each leads its own session)."""
    me = os.getpid()
    for pid in jobs:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                parent = int(stat.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            parent = me if sys.platform != "linux" else 0  # no /proc: trust our own record
        if parent != me:
            continue  # gone (reaped at once: SIGCHLD is ignored), its pid perhaps reused
        for sender in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                sender(pid, signal.SIGKILL)


def _offer(channel: socket.socket, pid: int, request_pipe: int) -> None:
    """Pass a waiting job process's request pipe to the server, keeping no copy of it here."""
    try:
        socket.send_fds(channel, [json.dumps({"job": pid}).encode()], [request_pipe])
    except OSError:  # the server is gone: so is its end of the socket, and the loop ends
        pass
    finally:
        os.close(request_pipe)


if __name__ == "__main__":
    main()
