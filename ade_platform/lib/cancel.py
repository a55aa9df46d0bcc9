"""A call's cancellation as the worker thread running it sees it.

A synchronous tool runs in a worker thread (FastMCP's plain call, or a task's body: mcp_bridge/tasks.py). When
its caller cancels (`tasks/cancel`, `notifications/cancelled`), the awaiting coroutine stops waiting, but the
thread runs on: whatever it started (a Snowfakery job, a long poll) would run to its own timeout, unseen.
So the caller's side sets the call's `threading.Event` (carried into the thread by the context, which
`anyio.to_thread.run_sync` copies), and work that can stop early checks `requested()` where it waits.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar

CANCELLED: ContextVar[threading.Event | None] = ContextVar("ade_call_cancelled", default=None)


def requested() -> bool:
    """Whether the caller of the call this thread runs has cancelled it (False outside a cancellable call)."""
    event = CANCELLED.get()
    return event is not None and event.is_set()
