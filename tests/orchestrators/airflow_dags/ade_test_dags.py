"""DAGs of our own for the orchestrator tests (loaded by a real Airflow 3 server; not imported by pytest).

- dbt_nightly: fails like a dbt build whose model reads a dropped column (a dbt-style Database Error).
- flaky_extract: fails its first try, succeeds on the retry.
- hello_success: succeeds.
- dbt_docs: runs a real dbt command (the platform's dbt, ADE_TEST_DBT) in a BashOperator.
"""

import os
from datetime import datetime, timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG

START = datetime(2026, 1, 1)
DBT = os.environ.get("ADE_TEST_DBT", "dbt")

DBT_FAILURE = r"""
echo "Running with dbt=1.10.0"
echo "Found 6 models, 12 data tests, 3 sources"
echo "1 of 2 START sql table model main.stg_orders ..... [RUN]"
echo "1 of 2 ERROR creating sql table model main.stg_orders ..... [ERROR in 0.05s]"
echo "Database Error in model stg_orders (models/staging/stg_orders.sql)"
echo '  Binder Error: Referenced column "fulfillment_status" not found in FROM clause!'
echo "Done. PASS=1 WARN=0 ERROR=1 SKIP=0 TOTAL=2"
exit 1
"""

with DAG("dbt_nightly", start_date=START, schedule=None, catchup=False, tags=["ade-test"]):
    BashOperator(task_id="dbt_build", bash_command=DBT_FAILURE, retries=0)


def _fail_first_try(ti=None, **_):
    if ti.try_number < 2:
        raise RuntimeError("connection refused by the source API (first try)")
    print("extracted 42 rows on try", ti.try_number)


with DAG("flaky_extract", start_date=START, schedule=None, catchup=False, tags=["ade-test"]):
    PythonOperator(
        task_id="extract", python_callable=_fail_first_try, retries=2, retry_delay=timedelta(seconds=1)
    )

with DAG("hello_success", start_date=START, schedule=None, catchup=False, tags=["ade-test"]):
    BashOperator(task_id="say_hello", bash_command="echo hello from airflow")

with DAG("dbt_docs", start_date=START, schedule=None, catchup=False, tags=["ade-test"]):
    BashOperator(task_id="dbt_version", bash_command=f"{DBT} --version")
