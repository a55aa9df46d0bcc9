"""An MCP client that only times the wire: newline-delimited JSON-RPC over a spawned server's stdio.

Client libraries do work of their own after the answer arrives: the Python SDK and FastMCP's Client check each
structured answer against the tool's output schema with `jsonschema` and build a pydantic model of it, which
for a few hundred rows costs more than the server spent. A server that publishes no output schema skips that
work, so comparing two servers through such a client measures the client's validation, not the servers.
`WireClient.call` returns when the response line has been read, before any parsing beyond `json.loads`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any

PROTOCOL_VERSION = "2025-06-18"


class WireClient:
    def __init__(self, command: str, args: list[str], env: dict[str, str], cwd: Path | None = None):
        self.command, self.args, self.env, self.cwd = command, args, env, cwd
        self._ids = itertools.count(1)
        self._proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> WireClient:
        self._proc = await asyncio.create_subprocess_exec(
            self.command,
            *self.args,
            env=self.env,
            cwd=self.cwd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=64 * 1024 * 1024,  # one answer is one line
        )
        info = {"name": "ade-bench-wire", "version": "1"}
        await self.request(
            "initialize", {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": info}
        )
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.close()
        try:
            await asyncio.wait_for(self._proc.wait(), 10)
        except TimeoutError:
            self._proc.kill()
            await self._proc.wait()

    async def _send(self, message: dict[str, Any]) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self._proc.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        request_id = next(self._ids)
        await self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        while True:  # notifications (logs, progress) may come first
            line = await self._proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.command} closed its stdout")
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Seconds from the request written to the response read, and the result."""
        started = time.perf_counter()
        result = await self.request("tools/call", {"name": tool, "arguments": arguments})
        return time.perf_counter() - started, result
