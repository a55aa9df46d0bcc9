"""OpenLineage through Dagster: `openlineage_events` folds a producer's file, `cross_stack_lineage` joins it and
sends the graph out, and the run sensors send each run (START, then COMPLETE or FAIL): all through the client's
file transport, every event conformant."""

from __future__ import annotations

import io
import json
from pathlib import Path

import dagster as dg
from openlineage.client.serde import Serde

from ade_platform.config import load_settings
from ade_platform.lib.lineage.sources import LINEAGE_ASSET
from ade_platform.lib.openlineage.conform import conform
from ade_platform.lib.openlineage.journal import read_files
from ade_platform.ops import materialize
from ade_platform.store import StoreReader
from tests.helpers import environment
from tests.openlineage.support import JOB, publish_warehouse, task_events


def test_assets_fold_join_and_send_and_runs_go_out(tmp_path: Path) -> None:
    produced, sent = tmp_path / "produced.jsonl", tmp_path / "sent.jsonl"
    produced.write_text("\n".join(json.dumps(Serde.to_dict(e)) for e in task_events(fail=True)) + "\n")
    config = tmp_path / "ade.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\n"
        "warehouses:\n  demo:\n    type: duckdb\n    path: demo.duckdb\n"
        "openlineage:\n"
        "  receive:\n    files: [produced.jsonl]\n"
        f"  emit:\n    transport: {{type: file, log_file_path: {sent}, append: true}}\n"
    )
    with environment({}, unset=["DAGSTER_HOME"]):
        settings = load_settings(config, env={})
        publish_warehouse(settings)
        log = io.StringIO()
        code = materialize(settings, "key:openlineage_events or key:cross_stack_lineage", out=log)
        assert code == 0, log.getvalue()[-3000:]
        graph = StoreReader(settings.store_root).latest(LINEAGE_ASSET).data
        assert f"openlineage:job:airflow/{JOB}" in {n["id"] for n in graph["nodes"]}
        out, refused = read_files([sent], 1000, 1 << 20)
        assert refused == 0 and JOB in {e["job"]["name"] for e in out}

        from ade_platform.definitions import build_definitions
        from ade_platform.ops import open_instance

        instance = open_instance(settings.dagster_home)
        run = instance.get_runs(limit=1)[0]
        success = instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.RUN_SUCCESS).records[0]
        sensors = {s.name: s for s in build_definitions(settings).sensors or ()}
        context = dg.build_run_status_sensor_context(
            sensor_name="openlineage_runs_sensor",
            dagster_event=success.event_log_entry.dagster_event,
            dagster_instance=instance,
            dagster_run=run,
        )
        sensors["openlineage_runs_sensor"](context)
        out, _ = read_files([sent], 1000, 1 << 20)
        runs = [
            e for e in out if e.get("run", {}).get("runId") and e["job"]["name"].startswith("materialize:")
        ]
        assert [e["eventType"] for e in runs] == ["START", "COMPLETE"]
        assert "cross_stack_lineage" in runs[0]["job"]["name"]
        for event in out:
            conform(event)


def test_the_events_sensor_folds_only_when_something_came(tmp_path: Path) -> None:
    from ade_platform.definitions import build_definitions
    from ade_platform.lib.openlineage import append_event
    from ade_platform.store import StoreWriter

    config = tmp_path / "ade.yaml"
    config.write_text(f"home: {tmp_path / 'home'}\nopenlineage:\n  receive:\n    enabled: true\n")
    settings = load_settings(config, env={})
    sensor = next(
        s for s in build_definitions(settings).sensors or () if s.name == "openlineage_events_sensor"
    )

    def tick(cursor: str | None) -> dg.SensorResult:
        with dg.instance_for_test() as instance:
            return sensor(dg.build_sensor_context(instance=instance, cursor=cursor))

    first = tick(None)  # nothing folded yet: a first fold
    assert len(first.run_requests or []) == 1 and first.cursor
    idle = tick(first.cursor)
    assert not idle.run_requests and idle.skip_reason and "no OpenLineage event" in str(idle.skip_reason)
    append_event(StoreWriter(settings.store_root).root, Serde.to_dict(task_events(fail=False)[0]), 100)
    again = tick(first.cursor)
    assert len(again.run_requests or []) == 1 and again.cursor != first.cursor
