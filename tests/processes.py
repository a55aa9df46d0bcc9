"""Servers the tests run in processes of their own: a free loopback port, waiting until a server answers,
stopping it; `ade mcp` over HTTP and a plain fakesnow server as context managers."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from ade_platform.emulators.demo import free_port

__all__ = [
    "ADE",
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
