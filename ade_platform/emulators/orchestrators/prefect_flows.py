"""The demo's flows, run once against the Prefect server `make demo-full` starts (with the Prefect virtualenv's
python; never imported by the platform): the same three builds of dbt_demo as the demo's Airflow DAGs
(airflow_dags/ade_demo_dags.py), with the same environment. Prints one JSON line: the run ids."""

import json
import os
import subprocess

from prefect import flow, get_run_logger, task

ADE = os.environ.get("ADE_DEMO_ADE", "ade")
DBT = os.environ.get("ADE_DEMO_DBT", "dbt")
PROJECT = os.environ.get("ADE_DEMO_PROJECT", "dbt_demo")
IN_PROJECT = ["--project-dir", PROJECT, "--profiles-dir", PROJECT]
TRIES = {"check_sources": 0}


def _dbt(*args: str, locked: bool = True) -> None:
    """dbt in the project folder (the team's target/), its output in the task's log; raises when it fails."""
    argv = [ADE, "write-lock", "demo", "--", DBT, *args, *IN_PROJECT] if locked else [DBT, *args, *IN_PROJECT]
    done = subprocess.run(argv, cwd=PROJECT, capture_output=True, text=True)
    # A failed command's output at ERROR: the task's log then holds dbt's error (the demo server keeps WARNING and up).
    log = get_run_logger().info if done.returncode == 0 else get_run_logger().error
    for line in (done.stdout + done.stderr).splitlines():
        log(line)
    if done.returncode != 0:
        raise RuntimeError(f"dbt {args[0]} failed with exit code {done.returncode}")


@task
def dbt_build() -> None:
    _dbt("build")


@task
def dbt_show_missing_column() -> None:
    _dbt("show", "--inline", "select fulfillment_status from main.orders")


@task(retries=2, retry_delay_seconds=2)
def check_sources() -> None:
    TRIES["check_sources"] += 1
    if TRIES["check_sources"] == 1:
        raise RuntimeError("the source API refused the connection")
    _dbt("parse", locked=False)


@flow(name="dbt_demo_build")
def dbt_demo_build() -> None:
    dbt_build()


@flow(name="dbt_demo_broken")
def dbt_demo_broken() -> None:
    dbt_show_missing_column()


@flow(name="dbt_demo_retrying")
def dbt_demo_retrying() -> None:
    check_sources()


if __name__ == "__main__":
    runs = {f.name: f(return_state=True) for f in (dbt_demo_build, dbt_demo_broken, dbt_demo_retrying)}
    print(json.dumps({name: str(state.state_details.flow_run_id) for name, state in runs.items()}))
