"""The Snowflake staleness sensor: re-collects the DDL of every synced object, publishes `snowflake_staleness`
(changed, dropped and new objects) to the store, and requests a re-sync of the repository when anything changed.
"""

import hashlib
import json
from typing import Any

from dagster import SensorEvaluationContext

from ade_platform.clients.snowflake import repository_root, sync_options
from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Polled, Tick, failure_sensor, reach, sensor_run
from ade_platform.defs.snowflake.assets import snowflake_account
from ade_platform.lib.snowflake.sync import collect, read_index, staleness
from ade_platform.store import StoreWriter

STALENESS_ASSET = "snowflake_staleness"


def staleness_report(settings: Settings, account: Polled[Any]) -> dict[str, Any] | None:
    """Fresh DDL compared with the repository index; None when nothing was synced yet."""
    section = settings.snowflake
    assert section is not None
    index = read_index(repository_root(settings))
    if not index:
        return None
    with reach(account) as service:
        inventory = collect(service, sync_options(section.sync))
    return staleness(index, inventory.objects)


def staleness_sensor(settings: Settings, job: Any) -> Any:
    section = settings.snowflake
    assert section is not None
    account = snowflake_account(settings)

    def poll(context: SensorEvaluationContext) -> Tick:
        report = staleness_report(settings, account)
        if report is None:
            return Tick(skip_reason="the DDL repository has not been synced yet")
        StoreWriter(settings.store_root, retention=settings.store.retention).publish(
            STALENESS_ASSET, report, source={"sensor": "snowflake_staleness_sensor"}
        )
        if not report["is_stale"]:
            return Tick(skip_reason="no synced Snowflake object changed")
        changed = sorted(o["objectName"] for o in report["stale"] + report["dropped"] + report["new"])
        digest = hashlib.sha256(json.dumps(changed).encode()).hexdigest()[:16]
        return Tick(
            run_requests=[
                sensor_run(
                    f"stale:{digest}",
                    "Snowflake DDL changed",
                    **{"ade/stale_objects": ", ".join(changed)[:1000]},
                )
            ]
        )

    return failure_sensor(
        "snowflake_staleness_sensor",
        job=job,
        minimum_interval_seconds=section.sync.staleness_interval_seconds,
        description="Compares the current DDL of every synced Snowflake object with the repository's hashes; "
        "publishes snowflake_staleness (changed, dropped, new objects) and re-syncs when something changed.",
        poll=poll,
    )
