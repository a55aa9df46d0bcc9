"""Live observations in Dagster: what the gateway's live tools saw (a tile failing, a column renamed, a source
that stopped loading, a run that failed) becomes an AssetObservation on the asset whose snapshot it is newer than
(`bi_health_<tool>`, `warehouse_schema_<warehouse>`, `warehouse_freshness_<warehouse>`, `dbt_cloud_runs`,
`orchestrator_runs_<backend>`), so the operator and the other sensors see it in the asset's history."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from typing import Any

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.observations.store_health import store_health_sensor
from ade_platform.store import StoreReader
from ade_platform.store.observations import (
    Observation,
    latest_observations,
    observation_history,
    observation_kinds,
)

SENSOR = "live_observations_sensor"
POLL_SECONDS = 30
MAX_EVENTS = 500  # per tick; the rest follow on the next ones (the cursor is the newest time emitted)


def observation_events(settings: Settings, defined: set[str], cursor: str | None) -> Any:
    """One tick: the observations recorded since the cursor (the first tick: the newest per key), as asset
    observations on the defined assets they refine; each is emitted once."""
    reader = StoreReader(settings.store_root)
    since = float(cursor) if cursor else None
    found: list[Observation] = []
    for kind in observation_kinds(reader):
        if since is None:
            found += latest_observations(reader, kind)
        else:
            found += [o for o in observation_history(reader, kind, since=since) if o.observed_at > since]
    found = sorted((o for o in found if o.asset in defined), key=lambda o: o.observed_at)[:MAX_EVENTS]
    if not found:
        return dg.SkipReason("no live observation since the last tick")
    events = [
        dg.AssetObservation(
            asset_key=o.asset,
            description=f"{o.kind} of {o.key}, observed live by {o.source}",
            metadata={
                "kind": o.kind,
                "key": o.key,
                "source": o.source,
                "observed_at": dg.MetadataValue.timestamp(o.observed_at),
                "state": dg.MetadataValue.json(o.state),
            },
        )
        for o in found
    ]
    return dg.SensorResult(asset_events=events, cursor=repr(found[-1].observed_at))


def build_observation_definitions(settings: Settings, defined: set[str]) -> dg.Definitions:
    @dg.sensor(
        name=SENSOR,
        minimum_interval_seconds=POLL_SECONDS,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Turns what the MCP gateway's live tools observed (dashboard and tile health, a table's live "
        "schema, a live freshness check, a run's status) into asset observations on the matching asset, once "
        "each: the asset's history shows that an agent saw it change before the next materialization did.",
    )
    def live_observations_sensor(context: dg.SensorEvaluationContext) -> Any:
        return observation_events(settings, defined, context.cursor)

    return dg.Definitions(sensors=[live_observations_sensor, store_health_sensor(settings, defined)])
