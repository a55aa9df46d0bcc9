"""A dbt Cloud emulator in its own process and an ade.yaml pointing the dbt-cloud toolset at it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ade_platform.config import Settings, load_settings
from ade_platform.emulators.dbt_cloud import ACCOUNT_ID, DEMO_TOKEN
from ade_platform.emulators.demo import free_port


@dataclass
class Emulator:
    url: str
    home: Path

    @property
    def api(self) -> str:
        return f"{self.url}/api/v2"

    def rate_limit(self, count: int, retry_after: int = 1) -> None:
        httpx.post(f"{self.url}/_emulator/rate-limit", json={"count": count, "retry_after": retry_after})

    def hold_runs(self, held: bool = True) -> None:
        """Keep queued runs from starting (True) or let them go (False), as when every run slot of the account is
        busy: a test that needs a run still in progress when it polls then does not race the machine's speed."""
        httpx.post(f"{self.url}/_emulator/hold", json={"held": held}, timeout=30).raise_for_status()

    @contextmanager
    def runs_held(self) -> Iterator[None]:
        self.hold_runs(True)
        try:
            yield
        finally:
            self.hold_runs(False)

    def queue_run(self, job_id: int, cause: str) -> int:
        """Trigger a run of `job_id` through dbt Cloud's API (not the toolset); its id. With runs held, it stays
        queued: a wait on it lasts until its timeout."""
        reply = httpx.post(
            f"{self.api}/accounts/{ACCOUNT_ID}/jobs/{job_id}/run/",
            json={"cause": cause},
            headers={"Authorization": f"Token {DEMO_TOKEN}"},
            timeout=30,
        )
        reply.raise_for_status()
        return int(reply.json()["data"]["id"])

    def counters(self) -> dict[str, int]:
        return httpx.get(f"{self.url}/_emulator/requests").json()

    def runs(self) -> list[dict[str, Any]]:
        """The account's runs (up to 100) with their triggers, steps overrides included. An API request: the
        emulator's request counter counts it."""
        reply = httpx.get(
            f"{self.api}/accounts/{ACCOUNT_ID}/runs/",
            params={"include_related": '["trigger"]', "limit": 100},
            headers={"Authorization": f"Token {DEMO_TOKEN}"},
        )
        return reply.json()["data"]

    def settings(self, *, token: str = DEMO_TOKEN, extra: str = "", base_url: str | None = None) -> Settings:
        """A dbt Cloud-only configuration (no local dbt project) with its own ADE_HOME."""
        home = self.home / f"ade-{time.monotonic_ns()}"
        config = home / "ade.yaml"
        home.mkdir(parents=True)
        config.write_text(
            "home: .\n"
            "mcp:\n  toolsets: [dbt-cloud, dbt-artifacts]\n"
            "dbt_cloud:\n"
            f"  base_url: {base_url or self.api}\n"
            "  account_id: 7001\n"
            "  api_token: ${DBT_CLOUD_API_TOKEN}\n"
            "  project_id: 7101\n"
            "  tracked_jobs: [7301, 7303]\n"
            "  poll_interval_seconds: 0.5\n" + extra
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ADE_", "DAGSTER_HOME"))}
        return load_settings(config, env={**env, "DBT_CLOUD_API_TOKEN": token, "ADE_HOME": str(home)})


@contextmanager
def running_emulator(home: Path, *, history: bool) -> Iterator[Emulator]:
    port = free_port()
    env = {**os.environ, "ADE_HOME": str(home), "ADE_DBT_CLOUD_EMULATOR_HISTORY": "1" if history else "0"}
    log = (home / "emulator.log").open("ab") if home.mkdir(parents=True, exist_ok=True) is None else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "ade_platform.emulators.dbt_cloud", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError("the dbt Cloud emulator exited on start-up")
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield Emulator(url, home)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        if log:
            log.close()
