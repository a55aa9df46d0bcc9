"""What `make demo` starts, end to end (issue 26): the launcher on free ports and a temporary home runs
`ade dev --materialize`; once the gateway is up, every call of the README's tour (docs/tour.json, one per toolset)
answers over streamable HTTP; then one SIGTERM to the launcher leaves no process and no port behind."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from ade_platform.emulators.demo import EMULATORS, free_port
from ade_platform.supervise import port_in_use
from tests.integration.test_demo_launcher import _processes_with_home
from tests.integration.tour import tour_calls
from tests.processes import ADE

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path("/proc/self/environ").exists(), reason="finds leftovers through /proc (Linux)"
    ),
]
# What points a process at another home or configuration: the launched demo must use only its own.
_FOREIGN = re.compile(r"^(ADE_|DAGSTER_HOME$|DBT_CLOUD_API_TOKEN$)")


def _wait_for_line(out: Path, pattern: str, launcher: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = out.read_text(errors="replace")
        if re.search(pattern, text):
            return
        assert launcher.poll() is None, text[-4000:]
        time.sleep(1)
    raise AssertionError(f"no {pattern!r} after {timeout:g} s:\n{out.read_text()[-4000:]}")


async def _tour(url: str) -> list[tuple[dict[str, Any], bool, Any]]:
    answers = []
    async with Client(url, timeout=300) as client:
        for call in tour_calls():
            result = await client.call_tool(call["tool"], call["arguments"], raise_on_error=False)
            text = result.content[0].text if result.content else ""
            answers.append((call, not result.is_error, result.structured_content or text))
    return answers


def test_make_demo_answers_the_tour_on_every_toolset_and_stops_on_sigterm(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    ports = {e.name: free_port() for e in EMULATORS}
    ui_port, mcp_port = free_port(), free_port()
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not _FOREIGN.match(k)}
    command = [ADE, "dev", "--materialize", "--ui-port", str(ui_port), "--mcp-port", str(mcp_port)]
    spec = ",".join(f"{name}={port}" for name, port in ports.items())
    with open(out, "w") as fh:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "ade_platform.emulators.demo", "--ports", spec, "--", *command],
            env={**env, "ADE_HOME": str(home)},
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # as `make` in a terminal: the signal reaches the launcher alone
        )
    try:
        url = f"http://127.0.0.1:{mcp_port}/mcp"
        _wait_for_line(out, rf"MCP gateway\s+{re.escape(url)}\s+up\b", launcher, timeout=1500)
        said = out.read_text()
        assert "✗" not in said, said[-4000:]  # every asset materialized, every check ran
        answers = asyncio.run(_tour(url))
        for call, ok, body in answers:
            assert ok, (call["tool"], body)
            assert isinstance(body, dict) and set(call["expect"]) <= set(body), (call["tool"], body)
            assert not body.get("error"), (call["tool"], body)
        assert len({call["toolset"] for call, _, _ in answers}) == 9

        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(timeout=180) in (0, 130, -signal.SIGTERM)
        assert _processes_with_home(home) == []
        assert not [p for p in [*ports.values(), ui_port, mcp_port] if port_in_use(p)]
    finally:
        for pid in _processes_with_home(home):
            os.kill(pid, signal.SIGKILL)
        if launcher.poll() is None:
            launcher.kill()
