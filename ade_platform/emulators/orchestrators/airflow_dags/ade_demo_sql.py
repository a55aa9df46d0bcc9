"""The demo's SQL DAGs (not dbt): a task runs SQL on the demo warehouse and reports what it read and wrote through
Airflow's OpenLineage provider, which `make demo-full` points at the gateway (and a file the demo's ade.yaml reads).

- ade_demo_sql: summarizes the raw orders per customer into main.customer_order_counts; succeeds.
- ade_demo_sql_broken: the same summary reading a column the raw orders lack; fails with DuckDB's Binder Error,
  a FAIL event with its errorMessage.

The SQL runs in the platform's Python (DuckDB is not in Airflow's virtualenv) under the warehouse's write lock
(`ade write-lock`), as the dbt DAGs do. The operator gives its lineage itself (`get_openlineage_facets_on_*`): the
provider's SQL parser needs a hook with database info, which DuckDB has no Airflow provider for.
"""

import os
import subprocess
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, BaseOperator

START = datetime(2026, 1, 1)
ADE = os.environ.get("ADE_DEMO_ADE", "ade")
PYTHON = str(Path(ADE).parent / "python")
DUCKDB_PATH = os.environ.get("ADE_DUCKDB_PATH", "demo.duckdb")
NAMESPACE = "duckdb://localhost"  # the naming spec's scheme; ADE matches it to its only DuckDB warehouse
DATABASE = Path(DUCKDB_PATH).stem  # DuckDB names a file's database after its stem
RUN_SQL = "import duckdb, sys; duckdb.connect(sys.argv[1]).execute(sys.argv[2])"


class DuckDBSQLOperator(BaseOperator):
    """Runs one SQL statement on the demo's DuckDB file; `reads` and `writes` are schema.table names."""

    template_fields = ("sql",)

    def __init__(self, *, sql: str, reads: list[str], writes: list[str], **kwargs):
        super().__init__(**kwargs)
        self.sql, self.reads, self.writes = sql, reads, writes

    def execute(self, context):
        done = subprocess.run(
            [ADE, "write-lock", "demo", "--", PYTHON, "-c", RUN_SQL, DUCKDB_PATH, self.sql],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError((done.stderr or done.stdout).strip().splitlines()[-1][:500])

    def get_openlineage_facets_on_start(self):
        from airflow.providers.openlineage.extractors import OperatorLineage
        from openlineage.client.event_v2 import Dataset
        from openlineage.client.facet_v2 import sql_job

        def dataset(name: str) -> Dataset:
            return Dataset(namespace=NAMESPACE, name=f"{DATABASE}.{name}")

        return OperatorLineage(
            inputs=[dataset(n) for n in self.reads],
            outputs=[dataset(n) for n in self.writes],
            job_facets={"sql": sql_job.SQLJobFacet(query=self.sql)},
        )

    def get_openlineage_facets_on_complete(self, task_instance):
        return self.get_openlineage_facets_on_start()

    def get_openlineage_facets_on_failure(self, task_instance):
        return self.get_openlineage_facets_on_start()


SUMMARY = (
    "create or replace table main.customer_order_counts as "
    "select o.customer_id, c.full_name, count(*) as orders "
    "from raw.orders o join raw.customers c on c.id = o.customer_id group by all"
)

with DAG("ade_demo_sql", start_date=START, schedule=None, catchup=False, tags=["ade-demo", "openlineage"]):
    DuckDBSQLOperator(
        task_id="summarize_orders",
        sql=SUMMARY,
        reads=["raw.orders", "raw.customers"],
        writes=["main.customer_order_counts"],
        retries=0,
    )

with DAG(
    "ade_demo_sql_broken", start_date=START, schedule=None, catchup=False, tags=["ade-demo", "openlineage"]
):
    DuckDBSQLOperator(
        task_id="summarize_orders",
        sql=SUMMARY.replace("count(*)", "sum(o.discount)"),
        reads=["raw.orders", "raw.customers"],
        writes=["main.customer_order_counts"],
        retries=0,
    )
