"""`make demo-full`'s orchestrators: Airflow 3 and Prefect 3 on loopback with the demo's DAGs and flows, a run of
each started, and the environment that points the demo's `orchestrators:` section at them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from ade_platform.config import REPO_ROOT
from ade_platform.emulators.orchestrators import (
    DEMO_DAGS,
    DEMO_FLOWS,
    DEMO_JOBS,
    DEMO_USER,
    SQL_DAGS,
    TOOLS,
    airflow_env,
    airflow_password,
    installed,
    openlineage_env,
    prefect_env,
    start_airflow,
    start_prefect,
    wait_until_answers,
)
from ade_platform.supervise import free_port, stop_groups

# Not 8793: Airflow's scheduler serves task logs there by default (moved to a free port below).
DEFAULT_PORTS = {"airflow": 8795, "prefect": 4200}


def missing() -> list[str]:
    """The orchestrators `make orchestrators` has not installed yet."""
    return [name for name in DEFAULT_PORTS if installed(name) is None]


def task_environment(home: Path, config: str) -> dict[str, str]:
    """What the demo's DAGs and flows read: the platform's own `ade` and `dbt`, the project, the demo's home."""
    bin_dir = Path(sys.executable).parent
    return {
        "ADE_DEMO_ADE": str(bin_dir / "ade"),
        "ADE_DEMO_DBT": str(bin_dir / "dbt"),
        "ADE_DEMO_PROJECT": str(REPO_ROOT / "dbt_demo"),
        "ADE_HOME": str(home),
        "ADE_CONFIG": config,
        "ADE_DUCKDB_PATH": str(home / "warehouse" / "demo.duckdb"),
        # dbt's target and log folders in the demo's home, never in the repository's project: a manifest the
        # DAGs leave in dbt_demo/target would be read as a team's newer build by every later platform on it
        "DBT_TARGET_PATH": str(home / "orchestrators" / "dbt-target"),
        "DBT_LOG_PATH": str(home / "orchestrators" / "dbt-logs"),
    }


def _gateway_url(config: str, platform_env: Mapping[str, str]) -> str:
    """Where `ade dev` will serve the gateway (mcp.http.port of the demo's ade.yaml)."""
    from ade_platform.config import ConfigError, load_settings

    try:
        port = load_settings(config, env=dict(platform_env)).mcp.http.port
    except (ConfigError, OSError, ValueError):
        port = 8765
    return f"http://127.0.0.1:{port}"


def start_orchestrators(
    home: Path,
    ports: Mapping[str, int],
    config: str,
    platform_env: Mapping[str, str],
    log_dir: Path,
    say=print,
) -> tuple[list[subprocess.Popen], dict[str, str]]:
    """Start both servers, load the demo's raw data while they boot (the DAGs build on it), start one run of every
    demo DAG and flow; returns the processes (stop them with `supervise.stop_groups`) and the environment that
    points the platform at them. `platform_env`: the environment `ade` runs in (the emulators' included)."""
    from ade_platform.clients.orchestrators.airflow import AirflowClient

    tasks = task_environment(home, config)
    procs: list[subprocess.Popen] = []
    try:
        airflow_home, prefect_home = home / "orchestrators" / "airflow", home / "orchestrators" / "prefect"
        airflow_home.mkdir(parents=True, exist_ok=True)
        prefect_home.mkdir(parents=True, exist_ok=True)
        # The scheduler's task-log server: a free port, not Airflow's default (a second Airflow would hold it).
        logs_port = str(free_port())
        events_dir = home / "orchestrators" / "openlineage"
        events_dir.mkdir(parents=True, exist_ok=True)
        aenv = airflow_env(
            airflow_home,
            ports["airflow"],
            DEMO_DAGS,
            AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=logs_port,
            **openlineage_env(_gateway_url(config, platform_env), events_dir),
            **tasks,
        )
        penv = {**prefect_env(prefect_home, ports["prefect"]), **tasks}
        procs.append(start_airflow(aenv, (log_dir / "airflow.log").open("ab")))
        procs.append(start_prefect(penv, (log_dir / "prefect.log").open("ab")))
        airflow_url, prefect_url = f"http://127.0.0.1:{ports['airflow']}", penv["PREFECT_API_URL"]
        say("ade: loading the demo's raw data for the orchestrators' dbt builds")
        raw = subprocess.run(
            [tasks["ADE_DEMO_ADE"], "materialize", "--select", "group:datasets"],
            env={**platform_env, "ADE_HOME": str(home), "ADE_CONFIG": config},
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if raw.returncode != 0:
            raise RuntimeError(f"the demo's raw data did not load:\n{raw.stdout[-2000:]}")
        wait_until_answers(f"{prefect_url}/health", procs[1], 300)
        say(f"ade: Prefect up at {prefect_url}; running the demo's flows (a build, a dbt error, a retry)")
        flows = subprocess.run(
            [str(TOOLS / "prefect" / "bin" / "python"), str(DEMO_FLOWS)],
            env=penv, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        if flows.returncode != 0:
            raise RuntimeError(f"the demo's Prefect flows did not run:\n{flows.stderr[-2000:]}")
        wait_until_answers(f"{airflow_url}/api/v2/version", procs[0], 900)
        password = airflow_password(airflow_home)
        client = AirflowClient(airflow_url, DEMO_USER, password)
        deadline = time.monotonic() + 300  # the DAG processor parses the folder within moments of start
        while {d["dag_id"] for d in client.list_dags()} < set(DEMO_JOBS) and time.monotonic() < deadline:
            time.sleep(2)
        while {d["dag_id"] for d in client.list_dags()} < set(SQL_DAGS) and time.monotonic() < deadline:
            time.sleep(2)
        for dag_id in (*DEMO_JOBS, *SQL_DAGS):
            client.trigger(dag_id, {"reason": "make demo-full"})
        say(f"ade: Airflow up at {airflow_url} (user {DEMO_USER}); a run of each demo DAG started")
    except BaseException:
        stop_groups(procs)
        raise
    env = {
        "ADE_AIRFLOW_URL": airflow_url,
        "ADE_AIRFLOW_USER": DEMO_USER,
        "ADE_AIRFLOW_PASSWORD": password,
        "ADE_PREFECT_URL": prefect_url,
    }
    return procs, env
