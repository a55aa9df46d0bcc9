"""Servers the tests run in processes of their own: a free loopback port, waiting until a server answers,
stopping it; `ade mcp` over HTTP and a plain fakesnow server as context managers, and `ade mcp` over stdio
driven request by request."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from ade_platform.emulators.demo import free_port

REPO_ROOT = Path(__file__).resolve().parents[1]

__all__ = [
    "ADE",
    "StdioGateway",
    "execute_all",
    "fakesnow_process",
    "fakesnow_warehouse",
    "free_port",
    "mcp_over_http",
    "stop",
    "wait_for_http",
    "wait_for_port",
]

ADE = str(Path(sys.executable).parent / "ade")


def wait_for_http(url: str, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until `url` answers (any status) while `proc` runs; AssertionError when it exits or never answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server for {url} exited with {proc.returncode}"
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {timeout:g} s")


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until something accepts connections on loopback `port` while `proc` runs (AssertionError otherwise)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server for port {port} exited with {proc.returncode}"
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.2)
    raise AssertionError(f"nothing listens on port {port} after {timeout:g} s")


def stop(proc: subprocess.Popen, timeout: float = 30) -> None:
    """Terminate, and kill what does not exit within `timeout`."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


@contextlib.contextmanager
def mcp_over_http(env: Mapping[str, str], *args: str) -> Iterator[tuple[str, int]]:
    """`ade mcp --transport http` on a free loopback port (`args` added) in `env`: (its /mcp URL, the port) once
    it answers; stopped after."""
    port = free_port()
    proc = subprocess.Popen(
        [ADE, "mcp", "--transport", "http", "--port", str(port), *args],
        env=dict(env),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        wait_for_http(url, proc)
        yield url, port
    finally:
        stop(proc)


@contextlib.contextmanager
def fakesnow_process() -> Iterator[dict[str, Any]]:
    """A fakesnow server (Snowflake's HTTP protocol) on loopback: the connect arguments (host, port, protocol)
    once it listens; any account/user/password. Its databases are shared in memory."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fakesnow", "-s", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc)
        yield {"host": "127.0.0.1", "port": port, "protocol": "http"}
    finally:
        stop(proc, timeout=10)


def execute_all(connection: Any, statements: Sequence[str]) -> None:
    """Run each statement on a DB-API connection (a Snowflake connector's), then close it."""
    try:
        cursor = connection.cursor()
        for statement in statements:
            cursor.execute(statement)
    finally:
        connection.close()


def fakesnow_warehouse(
    server: Mapping[str, Any], database: str, statements: Sequence[str], password: str = "pw", **fields: Any
) -> Any:
    """Run `statements` on the fakesnow `server` (it accepts any account, user and password), then the warehouse
    settings (`SnowflakeWarehouse`, `fields` added) that read `database` there."""
    import snowflake.connector

    from ade_platform.config import SnowflakeWarehouse

    execute_all(
        snowflake.connector.connect(account="acct", user="u", password=password, **server), statements
    )
    return SnowflakeWarehouse(
        type="snowflake", account="acct", user="u", password=password, database=database, **fields, **server
    )


class StdioGateway:
    """One `ade mcp` process over stdio, as an MCP host starts it: `ask` sends a request and returns its answer,
    keeping the notifications that came before it. `record` is the file the process writes the names of its
    loaded modules to when it answers its first tools/list (ADE_MODULES_AT_LISTING, mcp_bridge/startup.py)."""

    def __init__(self, config: Path, home: Path):
        self.record = home / "modules-at-listing.json"
        self.record.unlink(missing_ok=True)
        env = {
            **os.environ,
            "ADE_CONFIG": str(config),
            "ADE_HOME": str(home),
            "ADE_MODULES_AT_LISTING": str(self.record),
        }
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ade_platform.cli", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=REPO_ROOT,
        )
        self.next_id = 0
        self.notifications: list[str] = []

    def send(self, method: str, params: dict[str, Any] | None = None, notify: bool = False) -> int:
        assert self.proc.stdin is not None
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()
        return self.next_id

    def answer(self, request_id: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if message.get("id") == request_id:
                return message
            if "method" in message:
                self.notifications.append(message["method"])
        raise AssertionError(f"ade mcp exited before answering ({self.proc.wait(30)})")

    def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.answer(self.send(method, params))

    def start(self) -> dict[str, Any]:
        init = self.ask(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        )
        self.send("notifications/initialized", notify=True)
        return init["result"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
