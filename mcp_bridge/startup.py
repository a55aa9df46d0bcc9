"""What the gateway does once its tool list has been served: start the warm-ups that must not delay it.

An MCP host starts the gateway, initializes and lists the tools before it shows them to its model; anything
the gateway loads before answering that listing is paid on every start (docs/DEVELOPING.md, "Start-up").
Work that only makes a later call faster (the Snowfakery sandbox's zygote, its library, the recipe schema's
checker) is registered here by the toolset at build time and started once the first tools/list has been
answered, in the background. A call that arrives earlier starts what it needs itself.

`ADE_MODULES_AT_LISTING`, when set, names a file that receives the names of the modules loaded at the moment
the first listing was answered (JSON list): the contract test of the start-up path reads it from a real
`ade mcp` process (tests/contract/test_startup_imports.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.middleware import Middleware

log = logging.getLogger("ade.mcp")
MODULES_AT_LISTING = "ADE_MODULES_AT_LISTING"
# The warm-ups start this long after the first listing was answered, so the host reads the listing before
# their imports compete with writing it for the interpreter.
START_DELAY_SECONDS = 0.05


class AfterFirstListing(Middleware):
    """A middleware that acts once, on the first tools/list, and then removes itself from its server (FastMCP
    builds the middleware chain per request, so no later call passes through it)."""

    def __init__(self, server: FastMCP, warm_ups: list[Callable[[], None]]):
        self.server = server
        self.warm_ups = warm_ups
        self.listed = False
        self._lock = threading.Lock()

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        result = await call_next(context)
        self.fire()
        return result

    def fire(self) -> None:
        with self._lock:
            if self.listed:
                return
            self.listed = True
        with contextlib.suppress(ValueError):
            self.server.middleware.remove(self)
        record_modules()
        if not self.warm_ups:
            return
        try:
            asyncio.get_running_loop().call_later(START_DELAY_SECONDS, self._start)
        except RuntimeError:  # no event loop (a direct call): start now
            self._start()

    def _start(self) -> None:
        start_warm_ups(self.warm_ups)


def start_warm_ups(warm_ups: list[Callable[[], None]]) -> None:
    """Run the warm-ups in a background thread of their own."""
    threading.Thread(target=run_warm_ups, args=(warm_ups,), name="ade-warm-up", daemon=True).start()


def run_warm_ups(warm_ups: list[Callable[[], None]]) -> None:
    for warm_up in warm_ups:
        try:
            warm_up()
        except Exception as exc:  # an optimisation: the first call starts whatever is missing itself
            log.warning("a warm-up failed (%s); the first call will do its work", type(exc).__name__)


def record_modules() -> None:
    path = os.environ.get(MODULES_AT_LISTING)
    if not path:
        return
    with contextlib.suppress(OSError), open(path, "w", encoding="utf-8") as out:
        json.dump(sorted(sys.modules), out)
