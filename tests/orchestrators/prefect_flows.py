"""Flows of our own, run against a real Prefect 3 server by the test fixture (with the Prefect virtualenv's
python; never imported by pytest). Prints one JSON line: the ids the tests look for.

- nightly_dbt: its dbt_build task fails like a dbt build whose model reads a dropped column.
- flaky_extract: its task fails the first try and succeeds on the retry.
- hello: succeeds; also registered as the deployment hello/on-demand (no worker: triggered runs stay scheduled).
"""

import json

from prefect import flow, get_run_logger, task

ATTEMPTS = {"extract": 0}


@task
def dbt_build() -> None:
    logger = get_run_logger()
    logger.info("Running with dbt=1.10.0")
    logger.error("Database Error in model stg_orders (models/staging/stg_orders.sql)")
    logger.error('  column "fulfillment_status" does not exist')
    raise RuntimeError("dbt build failed: 1 error")


@flow(name="nightly_dbt")
def nightly_dbt() -> None:
    dbt_build()


@task(retries=2, retry_delay_seconds=0)
def extract() -> int:
    ATTEMPTS["extract"] += 1
    if ATTEMPTS["extract"] == 1:
        raise RuntimeError("connection refused by the source API (first try)")
    return 42


@flow(name="flaky_extract")
def flaky_extract() -> int:
    return extract()


@task
def say_hello(name: str) -> str:
    get_run_logger().info(f"hello {name}")
    return name


@flow(name="hello")
def hello(name: str = "world") -> str:
    return say_hello(name)


def main() -> None:
    ok = hello(return_state=True)
    failed = nightly_dbt(return_state=True)
    retried = flaky_extract(return_state=True)
    deployment_id = hello.to_deployment(name="on-demand").apply()
    print(
        json.dumps(
            {
                "ok_run": str(ok.state_details.flow_run_id),
                "failed_run": str(failed.state_details.flow_run_id),
                "retried_run": str(retried.state_details.flow_run_id),
                "deployment_id": str(deployment_id),
            }
        )
    )


if __name__ == "__main__":
    main()
