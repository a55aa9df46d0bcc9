"""Real orchestrator servers on 127.0.0.1 for the slow tests, each from its own virtualenv under .tools/
(`make orchestrators`). Session-scoped: started once, stopped when the session ends (Airflow is CPU-heavy)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.emulators.demo import free_port
from ade_platform.emulators.orchestrators import wait_until_answers
from tests.orchestrators.servers import airflow_env, prefect_env

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools"
HERE = Path(__file__).resolve().parent


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _installed(name: str, product: str) -> Path:
    """The orchestrator's executable in its virtualenv under .tools/; the test is skipped when it is missing."""
    executable = TOOLS / name / "bin" / name
    if not executable.exists():
        pytest.skip(f"{product} is not installed: run `make orchestrators`")
    return executable


def _started(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    """The server in a process group of its own (stopped whole by _stop), its output in `log`."""
    with log.open("w") as out:
        return subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def _wait(url: str, proc: subprocess.Popen, log: Path, timeout: float) -> float:
    try:
        return wait_until_answers(url, proc, timeout)
    except RuntimeError as exc:
        _stop(proc)
        pytest.fail(f"{exc}; log tail:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="session")
def airflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`airflow standalone` (Airflow 3, simple auth manager, SQLite, LocalExecutor) with our DAGs."""
    airflow = _installed("airflow", "Airflow")
    home = tmp_path_factory.mktemp("airflow")
    port = free_port()
    env = airflow_env(home, port, HERE / "airflow_dags", ADE_TEST_DBT=str(REPO / ".venv" / "bin" / "dbt"))
    log = home / "standalone.log"
    started = time.monotonic()
    proc = _started([str(airflow), "standalone"], env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(f"{url}/api/v2/version", proc, log, 900)
        passwords = home / "simple_auth_manager_passwords.json.generated"
        while not passwords.exists() and time.monotonic() - started < 60:
            time.sleep(0.5)
        password = json.loads(passwords.read_text())["ade"]
        yield {
            "url": url,
            "username": "ade",
            "password": password,
            "start_seconds": f"{time.monotonic() - started:.0f}",
        }
    finally:
        _stop(proc)


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`prefect server start` (Prefect 3.4, SQLite) with flows, a deployment and failed/successful runs."""
    prefect = _installed("prefect", "Prefect")
    home = tmp_path_factory.mktemp("prefect")
    port = free_port()
    env = prefect_env(home, port)
    url = env["PREFECT_API_URL"]
    log = home / "server.log"
    started = time.monotonic()
    proc = _started([str(prefect), "server", "start", "--host", "127.0.0.1", "--port", str(port)], env, log)
    try:
        _wait(f"{url}/health", proc, log, 180)
        start_seconds = time.monotonic() - started
        # long_log sends 60,000 log lines through the API: minutes on a busy machine (SQLite)
        runner = subprocess.run(
            [str(TOOLS / "prefect" / "bin" / "python"), str(HERE / "prefect_flows.py")],
            env=env, capture_output=True, text=True, timeout=1200,
        )  # fmt: skip
        if runner.returncode != 0:
            pytest.fail(f"prefect flows failed to run:\n{runner.stdout[-2000:]}\n{runner.stderr[-3000:]}")
        yield {
            "url": url,
            "start_seconds": f"{start_seconds:.0f}",
            **json.loads(runner.stdout.strip().splitlines()[-1]),
        }
    finally:
        _stop(proc)
