"""A light MCP client over streamable HTTP that only times the wire, and the load it makes: N clients at once.

FastMCP's Client validates each structured answer against the tool's output schema and builds models of it: at
64 clients in one process, the load generator would measure itself. `HttpSession` speaks JSON-RPC over HTTP with
httpx (one MCP session per client: initialize, notifications/initialized, then tools/call); a call returns when
its response has been read and parsed with orjson. Responses may be JSON or one SSE event, as the server picks.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

PROTOCOL_VERSION = "2025-11-25"
_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class CallFailed(RuntimeError):
    pass


class HttpSession:
    def __init__(self, http: httpx.AsyncClient, url: str):
        self.http, self.url = http, url
        self.headers = dict(_HEADERS)
        self._ids = itertools.count(1)

    async def open(self) -> HttpSession:
        answer = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "ade-bench-load", "version": "1"},
            },
        )
        self.headers["mcp-protocol-version"] = answer.get("protocolVersion", PROTOCOL_VERSION)
        await self.http.post(
            self.url,
            content=orjson.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            headers=self.headers,
        )
        return self

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ident = next(self._ids)
        body = orjson.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        response = await self.http.post(self.url, content=body, headers=self.headers)
        if "mcp-session-id" in response.headers:
            self.headers["mcp-session-id"] = response.headers["mcp-session-id"]
        if response.status_code != 200:
            raise CallFailed(f"{method}: HTTP {response.status_code}")
        message = _message(response)
        if "error" in message:
            raise CallFailed(f"{method}: {message['error']}")
        return message["result"]

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            raise CallFailed(f"{name}: {result.get('content')}")
        return result


def _message(response: httpx.Response) -> dict[str, Any]:
    if response.headers.get("content-type", "").startswith("application/json"):
        return orjson.loads(response.content)
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    return orjson.loads(data[-1])


Call = tuple[str, dict[str, Any]]


@dataclass
class Load:
    """What N clients measured: each call's latency (s), the wall time they ran, the calls that failed."""

    clients: int
    latencies: list[float] = field(default_factory=list)
    by_tool: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0
    errors: int = 0
    cpu_seconds: float | None = None  # the server's CPU time over the timed calls, when `cpu` was given
    first_error: str | None = None

    @property
    def throughput(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0


async def run_load(
    url: str,
    clients: int,
    calls: Sequence[Call],
    per_client: int,
    *,
    live: Call | None = None,
    cpu: Callable[[], float | None] | None = None,
) -> Load:
    """`clients` sessions at once, each making `per_client` calls cycling through `calls` (client i starts at
    call i); with `live`, client 0 makes only that call, again and again until the others are done (one agent
    reading a table live among agents asking cached questions). `cpu` reads the server's CPU time (seconds) just
    before the timed calls start and after they end."""
    load = Load(clients)
    limits = httpx.Limits(max_connections=clients + 4, max_keepalive_connections=clients + 4)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        sessions = [await HttpSession(http, url).open() for _ in range(clients)]
        for name, args in [*calls, *([live] if live is not None else [])]:  # warm: first reads, first imports
            await sessions[0].call(name, args)
        start = asyncio.Event()
        finished = 0

        async def client(i: int) -> None:
            session = sessions[i]
            mine = [live] if live is not None and i == 0 else list(calls)
            await start.wait()
            for n in itertools.count():
                if live is not None and i == 0:
                    if finished == clients - 1:
                        return
                elif n == per_client:
                    return
                name, args = mine[(i + n) % len(mine)]
                began = time.perf_counter()
                try:
                    await session.call(name, args)
                except (CallFailed, httpx.HTTPError) as exc:
                    load.errors += 1
                    load.first_error = load.first_error or f"{type(exc).__name__}: {exc}"[:300]
                    continue
                took = time.perf_counter() - began
                load.latencies.append(took)
                load.by_tool.setdefault(name, []).append(took)

        async def cached_client(i: int) -> None:
            nonlocal finished
            await client(i)
            finished += 1

        tasks = [
            asyncio.create_task(client(i) if live is not None and i == 0 else cached_client(i))
            for i in range(clients)
        ]
        cpu_before = cpu() if cpu is not None else None
        began = time.perf_counter()
        start.set()
        await asyncio.gather(*tasks)
        load.seconds = time.perf_counter() - began
        cpu_after = cpu() if cpu is not None else None
        if cpu_before is not None and cpu_after is not None:
            load.cpu_seconds = cpu_after - cpu_before
    return load
