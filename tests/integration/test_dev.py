"""`ade dev` brings up the Dagster UI (HTTP 200) and the MCP gateway, and prints the client config."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ade_platform.config import Settings
from tests.conftest import REPO_ROOT
from tests.processes import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_ade_dev_serves_ui_and_gateway(demo_settings: Settings, tmp_path: Path) -> None:
    ui_port, mcp_port = free_port(), free_port()
    out = tmp_path / "dev.out"
    env = {**os.environ, "ADE_HOME": str(demo_settings.home), "ADE_CONFIG": str(REPO_ROOT / "ade.yaml")}
    env.pop("DAGSTER_HOME", None)
    with open(out, "w") as fh:
        proc = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "ade"),
                "dev",
                "--ui-port",
                str(ui_port),
                "--mcp-port",
                str(mcp_port),
            ],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.time() + 240
        while time.time() < deadline and "Press Ctrl-C" not in out.read_text():
            assert proc.poll() is None, out.read_text()[-3000:]
            time.sleep(1)
        text = out.read_text()
        assert "Press Ctrl-C" in text, text[-3000:]
        assert f"http://127.0.0.1:{ui_port}   up" in text, text[-3000:]
        assert f"http://127.0.0.1:{mcp_port}/mcp   up" in text, text[-3000:]
        assert '"mcpServers"' in text and '"ade-platform"' in text
        assert httpx.get(f"http://127.0.0.1:{ui_port}/", timeout=10).status_code == 200
        graphql = httpx.post(
            f"http://127.0.0.1:{ui_port}/graphql",
            json={"query": "{ assetNodes { assetKey { path } groupName } }"},
            timeout=60,
        )
        assert graphql.status_code == 200
        assert any(
            n["assetKey"]["path"] == ["dbt_lineage_index"] for n in graphql.json()["data"]["assetNodes"]
        )
        # The UI is behind the gateway's Host/Origin guard: a rebinding page or a foreign origin gets 403.
        rebinding = httpx.get(
            f"http://127.0.0.1:{ui_port}/server_info",
            headers={"Host": f"attacker.example:{ui_port}"},
            timeout=10,
        )
        assert rebinding.status_code == 403
        foreign = httpx.post(
            f"http://127.0.0.1:{ui_port}/graphql",
            json={"query": "{ version }"},
            headers={"Origin": "http://attacker.example"},
            timeout=10,
        )
        assert foreign.status_code == 403 and "version" not in foreign.text
        # ... and the daemon runs beside it (schedules and sensors tick), as under `dagster dev`.
        health_query = "{ instance { daemonHealth { allDaemonStatuses { daemonType healthy } } } }"
        deadline = time.time() + 120
        while time.time() < deadline:
            statuses = httpx.post(
                f"http://127.0.0.1:{ui_port}/graphql", json={"query": health_query}, timeout=30
            )
            daemons = statuses.json()["data"]["instance"]["daemonHealth"]["allDaemonStatuses"]
            if any(d["daemonType"] == "SENSOR" and d["healthy"] for d in daemons):
                break
            time.sleep(2)
        else:
            pytest.fail(f"the sensor daemon never reported healthy: {daemons}")
        # SIGTERM to `ade dev` alone stops the UI, the daemon and the gateway it started.
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=90) == 0
        for port in (ui_port, mcp_port):
            with pytest.raises(httpx.HTTPError):
                httpx.get(f"http://127.0.0.1:{port}/", timeout=2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
