"""The sandbox's zygote: a long-lived process with Snowfakery already imported, forking one child per job.

Started by `sandbox.Sandbox` with a minimal environment and no terminal. Protocol on stdin/stdout, one
JSON object per line: the parent sends {"request": "<path of a request file>"}; the zygote forks, and
answers {"pid": <child pid>}. The child starts its own session (so the parent can kill its whole process
group), runs `worker.run_job(request)`, and writes its result next to the request. The zygote ignores
SIGCHLD, so finished children are reaped at once and `os.kill(pid, 0)` tells the parent a child is gone.
Importing Snowfakery takes seconds; forking a warm zygote takes milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import sys


def _preload() -> None:
    import faker
    import snowfakery.api
    import snowfakery.data_generator
    import snowfakery.output_streams
    import snowfakery.standard_plugins.datasets  # noqa: F401

    from ade_platform.lib.snowfakery import quiet, worker  # noqa: F401

    faker.Faker().name()  # loads the default locale's providers once, for every child


def _child(request_path: str, protocol_in: int, protocol_out: int) -> None:
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the child waits for its own subprocesses (dot)
    os.close(protocol_in)
    os.close(protocol_out)
    code = 1
    try:
        from ade_platform.lib.snowfakery.worker import run_job

        run_job(request_path)
        code = 0
    finally:
        os._exit(code)


def main() -> None:
    protocol_in = os.dup(0)
    protocol_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        os.dup2(devnull, fd)  # nothing the zygote or a child prints can reach the protocol stream
    _preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    reader = os.fdopen(protocol_in, "r", encoding="utf-8")
    writer = os.fdopen(protocol_out, "w", encoding="utf-8", buffering=1)
    writer.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in reader:
        try:
            request_path = json.loads(line)["request"]
        except (ValueError, KeyError, TypeError):
            writer.write(json.dumps({"error": "bad request"}) + "\n")
            continue
        pid = os.fork()
        if pid == 0:
            _child(request_path, reader.fileno(), writer.fileno())
        writer.write(json.dumps({"pid": pid}) + "\n")
    sys.exit(0)


if __name__ == "__main__":
    main()
