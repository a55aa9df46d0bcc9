"""The store's health in the Dagster UI: a latest snapshot that does not read back intact (truncated, garbled,
a checksum mismatch, a pointer to nothing) becomes an AssetObservation on its asset, and so does its recovery, so
the asset's page says what `ade status` and `ade store fsck` say. Answers meanwhile come from the previous good
version, stale, saying why (ade_platform/store/reader.py)."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import json
from typing import Any

import dagster as dg

from ade_platform.config import Settings
from ade_platform.store import StoreReader
from ade_platform.store.fsck import latest_problem

SENSOR = "store_health_sensor"
POLL_SECONDS = 300  # each tick reads every asset's latest snapshot back (checksums): not a hot loop


def store_health_events(settings: Settings, defined: set[str], cursor: str | None) -> Any:
    """One tick: the assets whose latest snapshot's state (intact or why not) changed since the last tick."""
    reader = StoreReader(settings.store_root)
    before: dict[str, str] = json.loads(cursor) if cursor else {}
    now: dict[str, str] = {}
    for asset in reader.assets():
        if asset in defined:
            problem = latest_problem(reader, asset)
            if problem:
                now[asset] = problem
    changed = sorted(a for a in set(before) | set(now) if before.get(a) != now.get(a))
    if not changed:
        return dg.SkipReason(f"{len(now)} corrupt latest snapshot(s), none changed since the last tick")
    events = [
        dg.AssetObservation(
            asset_key=asset,
            description=(
                f"snapshot_corrupt: {now[asset]}; answers use the previous good version (stale) until the "
                "asset is materialized again"
                if asset in now
                else "the latest snapshot reads back intact again"
            ),
            metadata={"snapshot_intact": asset not in now, "snapshot_problem": now.get(asset) or "none"},
        )
        for asset in changed
    ]
    return dg.SensorResult(asset_events=events, cursor=json.dumps(now, sort_keys=True))


def store_health_sensor(settings: Settings, defined: set[str]) -> dg.SensorDefinition:
    @dg.sensor(
        name=SENSOR,
        minimum_interval_seconds=POLL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Reads every asset's latest snapshot back from the store (checksums) and records on the "
        "asset when it stops, or starts again, to read back intact.",
    )
    def store_health(context: dg.SensorEvaluationContext) -> Any:
        return store_health_events(settings, defined, context.cursor)

    return store_health
