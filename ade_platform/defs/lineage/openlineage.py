"""OpenLineage in Dagster: a sensor folds received events when the journal or a producer's file changed; and out:
every run of the instance (materializations, and the audited live runs
`live__<tool>` the audit worker records) as START and COMPLETE or FAIL, and the cross-stack graph after each
build, sent through `openlineage.emit.transport`. A transport that fails is a warning, never a failed run."""

from datetime import UTC, datetime
from typing import Any

import dagster as dg

from ade_platform.config import OpenLineageEmit, Settings


def _iso(epoch: float | None) -> str:
    return datetime.fromtimestamp(
        epoch if epoch is not None else datetime.now(UTC).timestamp(), UTC
    ).isoformat()


def run_job_name(run: Any) -> str:
    """A run's job as ADE names it: the Dagster job, or for the implicit asset job the assets it materialized."""
    if not str(run.job_name).startswith("__ASSET_JOB"):
        return str(run.job_name)
    keys = sorted(k.to_user_string() for k in run.asset_selection or ())
    shown = ",".join(keys[:5]) + (f",+{len(keys) - 5}" if len(keys) > 5 else "")
    return f"materialize:{shown or 'assets'}"


def send_quietly(emit: OpenLineageEmit, events: list[Any], log: Any) -> int:
    from ade_platform.lib.openlineage.emit import send

    try:
        return send(emit, events)
    except (
        Exception
    ) as exc:  # a catalog that is down must not fail ADE's runs; the type only (no URL, no token)
        log.warning(f"OpenLineage events not sent ({type(exc).__name__}): check openlineage.emit.transport")
        return 0


def emit_run(context: Any, emit: OpenLineageEmit, failed: bool, message: str | None) -> int:
    from ade_platform.lib.openlineage.emit import run_events

    run = context.dagster_run
    stats = context.instance.get_run_stats(run.run_id)
    started = stats.start_time or stats.launch_time
    events = run_events(
        emit, run_job_name(run), run.run_id, _iso(started), _iso(stats.end_time), failed, message
    )
    return send_quietly(emit, events, context.log)


def openlineage_events_sensor(settings: Settings, asset: dg.AssetsDefinition) -> dg.SensorDefinition:
    """Materializes openlineage_events when an event was journaled or a producer's file changed since it last
    looked (the cursor is their signature), so an idle journal costs no run and no rebuild of the graph."""
    from ade_platform.defs.failure_sensor import Tick, failure_sensor, sensor_run

    receive = settings.openlineage.receive

    def poll(context: dg.SensorEvaluationContext) -> Tick:
        from ade_platform.lib.openlineage.journal import signature
        from ade_platform.store import StoreWriter

        now = signature(StoreWriter(settings.store_root).root, list(receive.files))
        if now == context.cursor:
            return Tick(skip_reason="no OpenLineage event since the last fold")
        return Tick(run_requests=[sensor_run(f"openlineage-{now}", "new OpenLineage events")], cursor=now)

    return failure_sensor(
        "openlineage_events_sensor",
        description="Folds received OpenLineage events (the gateway's journal, producers' files) into "
        "openlineage_events when they changed; cross_stack_lineage follows.",
        minimum_interval_seconds=60,
        poll=poll,
        asset_selection=[asset],
    )


def openlineage_sensors(settings: Settings) -> list[dg.SensorDefinition]:
    emit = settings.openlineage.emit
    if not emit.transport:
        return []

    @dg.run_status_sensor(
        name="openlineage_runs_sensor",
        run_status=dg.DagsterRunStatus.SUCCESS,
        monitor_all_code_locations=True,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Sends each successful run (materializations, audited live calls) as OpenLineage START and "
        "COMPLETE events (openlineage.emit).",
    )
    def openlineage_runs_sensor(context: dg.RunStatusSensorContext) -> None:
        emit_run(context, emit, False, None)

    @dg.run_failure_sensor(
        name="openlineage_failed_runs_sensor",
        monitor_all_code_locations=True,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Sends each failed run as OpenLineage START and FAIL events with its error (openlineage.emit).",
    )
    def openlineage_failed_runs_sensor(context: dg.RunFailureSensorContext) -> None:
        message = context.failure_event.message if context.failure_event is not None else None
        emit_run(context, emit, True, message)

    return [openlineage_runs_sensor, openlineage_failed_runs_sensor]
