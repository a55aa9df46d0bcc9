"""Run a snippet in a child Python under hard resource limits: a test of bounded work that cannot flake.

The limits are generous (tens of times what the bounded code needs) and enforced by the kernel: the unbounded
code these tests guard against needs minutes of CPU or gigabytes of memory, so it is killed (or raises
MemoryError) and the child fails, whatever the machine's load.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MEMORY_LIMIT = 1 << 30  # address space: the child needs ~50 MB
CPU_SECONDS = 60


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS))


def run_bounded(code: str) -> Any:
    """Run `code` (which prints one JSON value last) in a limited child; its value, or AssertionError."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        preexec_fn=_limits,
        timeout=CPU_SECONDS * 5,  # the CPU limit ends it first; this only guards a child blocked on nothing
    )
    assert done.returncode == 0, f"the child failed (rc {done.returncode}): {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])
