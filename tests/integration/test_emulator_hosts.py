"""The SaaS emulators refuse a web page's requests as the gateway does (issue 23 §3): each one, started as
`make demo` starts it (ade_platform.emulators.demo), answers a DNS-rebinding Host or a foreign Origin with 403
and a normal client (Host 127.0.0.1:PORT or localhost:PORT, no Origin) as before."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from ade_platform.emulators.demo import EMULATORS, free_port, start_all

pytestmark = pytest.mark.integration


def test_every_emulator_refuses_rebinding_and_cross_site_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADE_DBT_CLOUD_EMULATOR_HISTORY", "0")  # no scheduled dbt runs: only HTTP is tested
    ports = {e.name: free_port() for e in EMULATORS}
    running, _ = start_all(tmp_path, ports=ports)
    try:
        assert {r.emulator.name for r in running} == {"dbt_cloud", "looker", "metabase", "snowflake"}
        for r in running:
            url = r.url + r.emulator.ready_path
            port = ports[r.emulator.name]
            for headers in ({}, {"host": f"localhost:{port}"}):
                served = httpx.get(url, headers=headers, timeout=5)
                # the emulator's own answer (the Snowflake stand-in, fakesnow, has no page at "/": 404), not the guard's
                assert served.status_code == (404 if r.emulator.name == "snowflake" else 200), (
                    r.emulator.name,
                    headers,
                    served.text,
                )
            refusals = {
                "host_not_allowed": {"host": f"attacker.example:{port}"},
                "origin_not_allowed": {"origin": "http://attacker.example"},
            }
            for reason, headers in refusals.items():
                refused = httpx.get(url, headers=headers, timeout=5)
                assert refused.status_code == 403, (r.emulator.name, headers, refused.text)
                assert refused.json()["error"] == reason, (r.emulator.name, refused.text)
    finally:
        for r in running:
            r.stop()
