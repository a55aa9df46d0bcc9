"""The dashboard-error sensor: runs the tiles of every inventoried dashboard (read-only) and, when a dashboard
turns to error, re-materializes the BI health assets so their checks record it.

A dashboard that turns to error gets a second look before the sensor alerts, so a passing lock or timeout does
not; and so does the tool itself: when it does not answer (every tile of a tool that is down fails to run), the
tool is unreachable, not its dashboards broken, and its dashboards keep the status they had.
"""

import hashlib
import json
from typing import Any

from dagster import SensorEvaluationContext

from ade_platform.config import Settings
from ade_platform.defs.bi.assets import bi_tool
from ade_platform.defs.failure_sensor import (
    Tick,
    Unreachable,
    failure_sensor,
    reach,
    sensor_run,
)
from ade_platform.lib.bi.inventory import collect_health, turned_to_error
from ade_platform.lib.bi.names import inventory_asset
from ade_platform.store import SnapshotNotFound, StoreReader


def dashboard_error_sensor(settings: Settings, job: Any) -> Any:
    tools = {tool: bi_tool(settings, tool) for tool in settings.bi.tools}

    def health(client: Any, inventory: dict[str, Any]) -> dict[str, Any]:
        return collect_health(
            client,
            inventory,
            concurrency=settings.bi.max_concurrency,
            timeout=settings.bi.tile_timeout_seconds,
        )

    def poll(context: SensorEvaluationContext) -> Tick:
        reader = StoreReader(settings.store_root)
        previous: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        current: dict[str, str] = {}
        unreachable: list[str] = []
        for tool, polled in tools.items():
            try:
                inventory = reader.latest(inventory_asset(tool)).data
            except SnapshotNotFound:
                continue
            try:
                with reach(polled) as client:
                    for d in health(client, inventory)["dashboards"]:
                        current[f"{tool}:{d['id']}"] = d["status"]
                    suspects = {
                        k.split(":", 1)[1]
                        for k in turned_to_error(previous, current)
                        if k.startswith(f"{tool}:")
                    }
                    # A second look before alerting: the tool itself answers, and the dashboards still fail.
                    if suspects:
                        client.list_dashboards()
                        again = {
                            "tool": tool,
                            "dashboards": [d for d in inventory["dashboards"] if d["id"] in suspects],
                        }
                        for d in health(client, again)["dashboards"]:
                            current[f"{tool}:{d['id']}"] = d["status"]
            except Unreachable as exc:
                context.log.warning(str(exc))
                unreachable.append(str(exc))
                current = {k: v for k, v in current.items() if not k.startswith(f"{tool}:")}
                current.update({k: v for k, v in previous.items() if k.startswith(f"{tool}:")})
        newly = turned_to_error(previous, current)
        cursor = json.dumps(current, sort_keys=True)
        if not newly:
            checked = f"no dashboard turned to error ({len(current)} checked)"
            return Tick(cursor=cursor, skip_reason="; ".join([*unreachable, checked]))
        return Tick(
            run_requests=[
                sensor_run(
                    f"bi-error:{','.join(newly)}:{hashlib.sha1(cursor.encode()).hexdigest()[:12]}",
                    "dashboard turned to error",
                    **{"ade/dashboards": ",".join(newly)[:200]},
                )
            ],
            cursor=cursor,
        )

    return failure_sensor(
        "bi_dashboard_error_sensor",
        job=job,
        minimum_interval_seconds=settings.bi.sensor_interval_seconds,
        description="Runs the tiles of every inventoried dashboard (read-only) and, when a dashboard turns to "
        "error (confirmed by a second look, so a passing lock or timeout does not alert), re-materializes the "
        "BI health assets so their checks record it.",
        poll=poll,
    )
