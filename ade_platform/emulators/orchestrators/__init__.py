"""Real Airflow 3 and Prefect 3 servers on loopback, each from its own virtualenv under `.tools/` (`make
orchestrators`: their pins conflict with ours): how `make demo-full` and the slow orchestrator tests run them.

- `airflow_env` / `prefect_env`: the environment of a server (its own home, SQLite, loopback only: Airflow's API
  binds 0.0.0.0 unless AIRFLOW__API__HOST says otherwise), nothing inherited from another Airflow, Prefect or
  Dagster setup;
- `start_airflow` / `start_prefect`: the server in a process group of its own (stopped whole by
  `supervise.stop_groups`), its output in a log; `wait_until_answers` until its health URL answers;
- the demo's DAGs (`airflow_dags/`) and flows (`prefect_flows.py`) build `dbt_demo` with the platform's dbt, under
  the warehouse's write lock (`ade write-lock`): one builds, one fails with a dbt error in its log, one retries.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import IO

import httpx

from ade_platform.config import REPO_ROOT
from ade_platform.supervise import start_group

TOOLS = REPO_ROOT / ".tools"
HERE = Path(__file__).resolve().parent
DEMO_DAGS = HERE / "airflow_dags"
DEMO_FLOWS = HERE / "prefect_flows.py"
DEMO_USER = "ade"  # Airflow's simple auth manager generates its password at start (airflow_password)
DEMO_JOBS = ("dbt_demo_build", "dbt_demo_broken", "dbt_demo_retrying")
# Airflow only: SQL tasks (not dbt) whose lineage the OpenLineage provider sends (airflow_dags/ade_demo_sql.py)
SQL_DAGS = ("ade_demo_sql", "ade_demo_sql_broken")


def installed(name: str) -> Path | None:
    """The orchestrator's executable (`airflow`, `prefect`) in its virtualenv under .tools/, when installed."""
    executable = TOOLS / name / "bin" / name
    return executable if executable.exists() else None


def _clean(prefixes: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


def airflow_env(home: Path, port: int, dags_folder: Path, **extra: str) -> dict[str, str]:
    """`airflow standalone` with its own AIRFLOW_HOME (SQLite, LocalExecutor, simple auth manager with the user
    `ade`), the DAGs of `dags_folder` unpaused, its API on 127.0.0.1:`port`."""
    airflow = TOOLS / "airflow" / "bin"
    return {
        **_clean(("AIRFLOW", "DAGSTER")),
        "PATH": f"{airflow}:{os.environ.get('PATH', '')}",
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags_folder),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{DEMO_USER}:admin",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW__CORE__PARALLELISM": "4",
        **extra,
    }


def openlineage_env(gateway_url: str, events_dir: Path) -> dict[str, str]:
    """Airflow's OpenLineage provider pointed at the gateway's /api/v1/lineage, and at a file the demo's ade.yaml
    also reads (`openlineage.receive.files`): the demo's first DAG runs end before `ade dev` starts the gateway."""
    transport = {
        "type": "composite",
        "continue_on_failure": True,
        "transports": [
            {"type": "http", "url": gateway_url, "endpoint": "api/v1/lineage", "timeout": 5},
            {"type": "file", "log_file_path": str(events_dir / "airflow.jsonl"), "append": True},
        ],
    }
    return {
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(transport),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "ade-demo-airflow",
    }


def prefect_env(home: Path, port: int) -> dict[str, str]:
    """The environment of `prefect server start` and of the flows run against it: its own PREFECT_HOME
    (SQLite), no UI, no scheduler, no analytics; nothing inherited from a Prefect or Dagster setup."""
    return {
        **_clean(("PREFECT", "DAGSTER")),
        "PREFECT_HOME": str(home),
        "PREFECT_API_URL": f"http://127.0.0.1:{port}/api",
        "PREFECT_SERVER_API_HOST": "127.0.0.1",
        "PREFECT_SERVER_API_PORT": str(port),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
    }


def start_airflow(env: dict[str, str], log: IO[bytes]) -> subprocess.Popen:
    return start_group(
        [str(TOOLS / "airflow" / "bin" / "airflow"), "standalone"], env=env, stdout=log, stderr=log
    )


def start_prefect(env: dict[str, str], log: IO[bytes]) -> subprocess.Popen:
    port = env["PREFECT_SERVER_API_PORT"]
    argv = [
        str(TOOLS / "prefect" / "bin" / "prefect"),
        "server",
        "start",
        "--host",
        "127.0.0.1",
        "--port",
        port,
    ]
    return start_group(argv, env=env, stdout=log, stderr=log)


def wait_until_answers(url: str, proc: subprocess.Popen, timeout: float) -> float:
    """Seconds until `url` answers below 500 while `proc` runs; RuntimeError when it exits or never answers."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the server for {url} exited with {proc.returncode}")
        try:
            if httpx.get(url, timeout=3).status_code < 500:
                return time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(1)
    raise RuntimeError(f"{url} did not answer within {timeout:.0f} s")


def airflow_password(home: Path, timeout: float = 60) -> str:
    """The password Airflow's simple auth manager generated for `ade` (it writes the file once it starts)."""
    path = home / "simple_auth_manager_passwords.json.generated"
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    return json.loads(path.read_text())[DEMO_USER]
