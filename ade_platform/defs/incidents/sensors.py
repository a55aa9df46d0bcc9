"""The incidents sensor: every `incidents.interval_seconds` it reads the store's health (the snapshots the other
domains publish and the live observations agents write back), explains each unhealthy symptom, groups them into
incidents and records what changed in the incidents' journal, where every gateway replica watches it (push) and
`ade status` reads it. When something changed it records an observation on the `incidents` asset: each open
incident with its chain as a Mermaid graph. Webhooks are handed to a background sender: never on this path."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import time
from typing import Any

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.lineage.assets import topology
from ade_platform.lib.incidents.cycle import markdown, run_cycle
from ade_platform.lib.incidents.grouping import Policy
from ade_platform.lib.incidents.webhooks import notify
from ade_platform.store import StoreReader

SENSOR = "incidents_sensor"
INCIDENTS_ASSET = "incidents"
GROUP = "incidents"


MONITOR_TAG = "ade/incidents-monitor"


def monitor_request(settings: Settings, monitored: list[str], instance: Any) -> list[dg.RunRequest]:
    """A refresh of the monitored assets, unless the last one is still running (they never pile up)."""
    if not monitored:
        return []
    if instance is not None:
        busy = instance.get_runs(
            filters=dg.RunsFilter(
                tags={MONITOR_TAG: "1"},
                statuses=[
                    dg.DagsterRunStatus.QUEUED,
                    dg.DagsterRunStatus.STARTING,
                    dg.DagsterRunStatus.STARTED,
                ],
            ),
            limit=1,
        )
        if busy:
            return []
    window = int(time.time() // settings.incidents.interval_seconds)
    return [
        dg.RunRequest(
            run_key=f"incidents-monitor-{window}",
            asset_selection=[dg.AssetKey(a) for a in monitored],
            tags={MONITOR_TAG: "1"},
        )
    ]


def incident_tick(settings: Settings, monitored: list[str] | None = None, instance: Any = None) -> Any:
    """One tick: detection, then the `incidents` observation when an incident opened or changed, and the refresh
    of the monitored assets (what the next tick reads)."""
    cfg = settings.incidents
    wh = settings.warehouses.get(settings.dbt.warehouse or "") if settings.dbt is not None else None
    cycle = run_cycle(
        StoreReader(settings.store_root),
        topology(settings),
        Policy(max_open=cfg.max_open, grouping_window_seconds=cfg.grouping_window_seconds),
        dialect=wh.type if wh else None,
        max_symptoms=cfg.max_symptoms,
    )
    notify(cfg.webhooks, cycle.events, cycle.state)
    active = cycle.state.active()
    said = f"{cycle.symptoms_seen} unhealthy node(s), {len(active)} open incident(s)"
    runs = monitor_request(settings, monitored or [], instance)
    if not cycle.events and not runs:
        return dg.SkipReason(f"nothing changed: {said} ({cycle.elapsed_ms:.0f} ms)")
    if not cycle.events:
        return dg.SensorResult(run_requests=runs)
    kinds = sorted({e["type"] for e in cycle.events})
    observation = dg.AssetObservation(
        asset_key=INCIDENTS_ASSET,
        description=f"{len(cycle.events)} change(s) ({', '.join(kinds)}): {said}",
        metadata={
            "open_incidents": len(active),
            "unhealthy_nodes": cycle.symptoms_seen,
            "suppressed_over_max_open": cycle.suppressed,
            "detection_ms": cycle.elapsed_ms,
            "incidents": dg.MetadataValue.md(markdown(cycle.state)),
        },
    )
    return dg.SensorResult(asset_events=[observation], run_requests=runs)


def build_incident_definitions(settings: Settings, defined: set[str]) -> dg.Definitions:
    spec = dg.AssetSpec(
        INCIDENTS_ASSET,
        group_name=GROUP,
        description="Open incidents (one per root cause), observed by the incidents sensor: each with its "
        "symptoms, verdict and chain (docs/INCIDENTS.md). Nothing to materialize.",
    )

    monitored = [a for a in settings.incidents.monitor_assets if a in defined]

    @dg.sensor(
        name=SENSOR,
        asset_selection=[dg.AssetKey(a) for a in monitored] or None,
        minimum_interval_seconds=settings.incidents.interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Finds unhealthy tiles, models, sources, tables and jobs in the store, explains each from "
        "the snapshots, groups them by root cause into incidents and records what changed (docs/INCIDENTS.md).",
    )
    def incidents_sensor(context: dg.SensorEvaluationContext) -> Any:
        return incident_tick(settings, monitored, context.instance)

    return dg.Definitions(assets=[spec], sensors=[incidents_sensor])
