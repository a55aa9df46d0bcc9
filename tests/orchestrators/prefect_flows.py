"""Flows of our own, run against a real Prefect 3 server by the test fixture (with the Prefect virtualenv's
python; never imported by pytest). Prints one JSON line: the ids the tests look for.

- nightly_dbt: its dbt_build task fails like a dbt build whose model reads a dropped column.
- flaky_extract: its task fails the first try and succeeds on the retry.
- hello: succeeds; also registered as the deployment hello/on-demand (no worker: triggered runs stay scheduled).
- long_log: its task writes 60,000 log lines, the last one its error, then fails.
- gated: never runs; its deployment gated/manual has a cancelled run and, newer, a paused one.
"""

import json
from datetime import UTC, datetime, timedelta

from prefect import flow, get_client, get_run_logger, task
from prefect.client.schemas.actions import LogCreate
from prefect.context import TaskRunContext
from prefect.states import Cancelled, Paused

LONG_LOG_LINES = 60_000
LONG_LOG_ERROR = "FATAL the load of fct_orders failed: disk quota exceeded"

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


@task
def load_everything() -> None:
    """A long log, sent in batches as Prefect's own API log handler does, its lines a millisecond apart."""
    run = TaskRunContext.get().task_run
    # The lines end now, so Prefect's own record of the failure (logged when the task raises) comes after them
    # in time order, however fast they are sent.
    start = datetime.now(UTC) - timedelta(milliseconds=LONG_LOG_LINES)
    entries = [
        LogCreate(
            name="prefect.task_runs",
            level=40 if i == LONG_LOG_LINES - 1 else 20,
            message=LONG_LOG_ERROR if i == LONG_LOG_LINES - 1 else f"loaded batch {i} of {LONG_LOG_LINES}",
            timestamp=start + timedelta(milliseconds=i),
            flow_run_id=run.flow_run_id,
            task_run_id=run.id,
        )
        for i in range(LONG_LOG_LINES)
    ]
    with get_client(sync_client=True) as client:
        for first in range(0, LONG_LOG_LINES, 5_000):
            client.create_logs(entries[first : first + 5_000])
    raise RuntimeError(LONG_LOG_ERROR)


@flow(name="long_log")
def long_log() -> None:
    load_everything()


@flow(name="gated")
def gated() -> None:
    pass


def gated_runs() -> tuple[str, str]:
    """Two runs of gated/manual (no worker ever starts them): one cancelled, then a newer one paused."""
    deployment_id = gated.to_deployment(name="manual").apply()
    with get_client(sync_client=True) as client:
        cancelled = client.create_flow_run_from_deployment(deployment_id)
        client.set_flow_run_state(cancelled.id, Cancelled(), force=True)
        paused = client.create_flow_run_from_deployment(deployment_id)
        client.set_flow_run_state(paused.id, Paused(timeout_seconds=86_400), force=True)
    return str(cancelled.id), str(paused.id)


def main() -> None:
    ok = hello(return_state=True)
    failed = nightly_dbt(return_state=True)
    retried = flaky_extract(return_state=True)
    long = long_log(return_state=True)
    deployment_id = hello.to_deployment(name="on-demand").apply()
    cancelled_run, paused_run = gated_runs()
    print(
        json.dumps(
            {
                "ok_run": str(ok.state_details.flow_run_id),
                "failed_run": str(failed.state_details.flow_run_id),
                "retried_run": str(retried.state_details.flow_run_id),
                "long_log_run": str(long.state_details.flow_run_id),
                "deployment_id": str(deployment_id),
                "cancelled_run": cancelled_run,
                "paused_run": paused_run,
            }
        )
    )


if __name__ == "__main__":
    main()
