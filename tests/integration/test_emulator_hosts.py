"""The SaaS emulators refuse a web page's requests as the gateway does (issue 23 §3): each one, started as
`make demo` starts it (ade_platform.emulators.demo), answers a DNS-rebinding Host or a foreign Origin with 403
and a normal client (Host 127.0.0.1:PORT, no Origin) as before."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ade_platform.emulators.demo import EMULATORS, Emulator, free_port

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("emulator", EMULATORS, ids=[e.name for e in EMULATORS])
def test_emulator_refuses_rebinding_and_cross_site_requests(emulator: Emulator, tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "ADE_HOME": str(tmp_path), "ADE_DBT_CLOUD_EMULATOR_HISTORY": "0"}
    proc = subprocess.Popen(
        [sys.executable, "-m", emulator.module, "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}{emulator.ready_path}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, f"{emulator.name} exited on start-up"
            try:
                served = httpx.get(url, timeout=2)
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, f"{emulator.name} did not start"
                time.sleep(0.2)
        assert served.status_code == 200, served.text
        refusals = {
            "host_not_allowed": {"host": f"attacker.example:{port}"},
            "origin_not_allowed": {"origin": "http://attacker.example"},
        }
        for reason, headers in refusals.items():
            refused = httpx.get(url, headers=headers, timeout=5)
            assert refused.status_code == 403 and refused.json()["error"] == reason, (headers, refused.text)
        assert httpx.get(url, headers={"host": f"localhost:{port}"}, timeout=5).status_code == 200
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
