"""The demo's DAGs (loaded by `airflow standalone` under `make demo-full`; never imported by the platform). Each
builds dbt_demo the way a team's scheduler would: the platform's dbt in the project folder (so its artifacts land
in dbt_demo/target, the folder ADE watches), under the demo warehouse's write lock (`ade write-lock`).

- dbt_demo_build: `dbt build`, succeeds.
- dbt_demo_broken: a query on a column that does not exist: fails with dbt's Database Error in its log.
- dbt_demo_retrying: its source check fails the first try, then `dbt parse` succeeds on the retry.

The launcher sets ADE_DEMO_ADE, ADE_DEMO_DBT, ADE_DEMO_PROJECT (and ADE_HOME, ADE_CONFIG, ADE_DUCKDB_PATH).
"""

import os
from datetime import datetime, timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import DAG

START = datetime(2026, 1, 1)
ADE = os.environ.get("ADE_DEMO_ADE", "ade")
DBT = os.environ.get("ADE_DEMO_DBT", "dbt")
PROJECT = os.environ.get("ADE_DEMO_PROJECT", "dbt_demo")
IN_PROJECT = f"--project-dir {PROJECT} --profiles-dir {PROJECT}"
LOCKED = f"cd {PROJECT} && {ADE} write-lock demo -- {DBT}"

with DAG("dbt_demo_build", start_date=START, schedule=None, catchup=False, tags=["ade-demo"]):
    BashOperator(task_id="dbt_build", bash_command=f"{LOCKED} build {IN_PROJECT}")

with DAG("dbt_demo_broken", start_date=START, schedule=None, catchup=False, tags=["ade-demo"]):
    BashOperator(
        task_id="dbt_build",
        bash_command=f'{LOCKED} show {IN_PROJECT} --inline "select fulfillment_status from main.orders"',
        retries=0,
    )

with DAG("dbt_demo_retrying", start_date=START, schedule=None, catchup=False, tags=["ade-demo"]):
    BashOperator(
        task_id="check_sources",
        bash_command="test {{ ti.try_number }} -ge 2 || { echo 'the source API refused the connection'; exit 1; }; "
        f"cd {PROJECT} && {DBT} parse {IN_PROJECT}",
        retries=2,
        retry_delay=timedelta(seconds=2),
    )
