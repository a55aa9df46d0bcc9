"""A small Dagster project of our own, run into a temporary instance: what the dagster backend reads in tests.

- `nightly_dbt`: one `dbt_build` step; succeeds, then fails with a dbt-like database error in its log.
- `flaky_load`: a step with a retry policy that fails its first attempt and succeeds on the second.
"""

from pathlib import Path

import dagster as dg

SECRET = "s3cr3t-hunter2-value"
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}


@dg.op(config_schema={"fail": bool})
def dbt_build(context: dg.OpExecutionContext) -> None:
    context.log.info("Running command: dbt build --select staging.*")
    context.log.info(f"connecting with password={SECRET}")
    if context.op_config["fail"]:
        context.log.error("22 of 24 ERROR creating sql table model main.stg_orders")
        context.log.error("Database Error in model stg_orders (models/staging/stg_orders.sql)")
        raise dg.Failure(
            description='Database Error in model stg_orders: column "fulfillment_status" does not exist'
        )
    context.log.info("Completed successfully")


@dg.job(description="dbt build of the staging models")
def nightly_dbt() -> None:
    dbt_build()


@dg.op(config_schema={"marker": str}, retry_policy=dg.RetryPolicy(max_retries=2))
def load_raw(context: dg.OpExecutionContext) -> None:
    marker = Path(context.op_config["marker"])
    if not marker.exists():
        marker.write_text("first attempt")
        raise RuntimeError("connection refused by the source database")
    context.log.info("loaded 42 rows")


@dg.job
def flaky_load() -> None:
    load_raw()


def populate(instance: dg.DagsterInstance, workdir: Path) -> dict[str, str]:
    """Run the jobs into the instance; the run ids by role."""
    ok = nightly_dbt.execute_in_process(
        instance=instance, run_config={**QUIET, "ops": {"dbt_build": {"config": {"fail": False}}}}
    )
    failed = nightly_dbt.execute_in_process(
        instance=instance,
        run_config={**QUIET, "ops": {"dbt_build": {"config": {"fail": True}}}},
        raise_on_error=False,
    )
    retried = flaky_load.execute_in_process(
        instance=instance,
        run_config={**QUIET, "ops": {"load_raw": {"config": {"marker": str(workdir / "marker")}}}},
    )
    return {"ok": ok.run_id, "failed": failed.run_id, "retried": retried.run_id}
