"""Live tools run as ad-hoc Dagster ops: the run, its tags and its outcome are in the instance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ade_platform.live import TAG_ARGUMENTS, TAG_CAUSE, TAG_TOOL, LiveRunner

pytestmark = pytest.mark.integration


def test_live_op_is_recorded_with_redacted_tags(tmp_path: Path) -> None:
    runner = LiveRunner(tmp_path / "dagster")
    result = runner.run(
        "warehouse_execute",
        lambda: {"rows": [[1]]},
        arguments={"sql": "select * from users where ssn = '123-45-6789'", "password": "hunter2", "limit": 5},
        cause="agent checking a row count",
    )
    assert result.value == {"rows": [[1]]}
    assert result.stamp()["source"] == "live" and result.stamp()["run_id"] == result.run_id

    from dagster import DagsterRunStatus

    run = runner.instance().get_run_by_id(result.run_id)
    assert run is not None and run.status == DagsterRunStatus.SUCCESS
    assert run.job_name == "live__warehouse_execute"
    assert run.tags[TAG_TOOL] == "warehouse_execute"
    assert run.tags[TAG_CAUSE] == "agent checking a row count"
    args = json.loads(run.tags[TAG_ARGUMENTS])
    assert args["password"] == "***" and args["limit"] == 5
    assert "123-45-6789" not in run.tags[TAG_ARGUMENTS] and "hunter2" not in json.dumps(run.tags)


def test_failing_live_op_raises_and_is_recorded_as_failed(tmp_path: Path) -> None:
    runner = LiveRunner(tmp_path / "dagster")

    class Boom(Exception):
        pass

    def fail() -> None:
        raise Boom("no such table")

    with pytest.raises(Boom):
        runner.run("warehouse_execute", fail, arguments={"sql": "select 1"})
    from dagster import DagsterRunStatus, RunsFilter

    runs = runner.instance().get_runs(RunsFilter(tags={TAG_TOOL: "warehouse_execute"}))
    assert [r.status for r in runs] == [DagsterRunStatus.FAILURE]


def test_read_only_fast_path_records_the_same_audit_run(tmp_path: Path) -> None:
    from dagster import DagsterRunStatus, RunsFilter

    runner = LiveRunner(tmp_path / "dagster")
    result = runner.run(
        "warehouse_execute",
        lambda: {"rows": 1},
        arguments={"sql": "select count(*) from t where email = 'a@b.c'"},
        cause="fast",
        read_only=True,
    )
    assert result.value == {"rows": 1}

    class Refused(Exception):
        code = "query_failed"

    def fail() -> None:
        raise Refused("value 'a@b.c' is not valid")

    with pytest.raises(Refused):
        runner.run("warehouse_execute", fail, arguments={"sql": "select 1"}, read_only=True)
    runner.flush()
    instance = runner.instance()
    ok = instance.get_run_by_id(result.run_id)
    assert ok is not None and ok.status == DagsterRunStatus.SUCCESS
    assert ok.tags["ade/path"] == "fast" and ok.tags[TAG_CAUSE] == "fast"
    assert "a@b.c" not in ok.tags[TAG_ARGUMENTS]
    runs = instance.get_runs(RunsFilter(tags={TAG_TOOL: "warehouse_execute"}))
    assert sorted(r.status.value for r in runs) == ["FAILURE", "SUCCESS"]
    failed = next(r for r in runs if r.status == DagsterRunStatus.FAILURE)
    messages = " ".join(f"{e.message} {e.dagster_event!r}" for e in instance.all_logs(failed.run_id))
    assert "query_failed" in messages and "a@b.c" not in messages


def test_write_tools_never_take_the_fast_path(tmp_path: Path) -> None:
    runner = LiveRunner(tmp_path / "dagster")
    result = runner.run("execute_ddl", lambda: "done", arguments={"sql": "create table x (a int)"})
    run = runner.instance().get_run_by_id(result.run_id)
    assert run is not None and "ade/path" not in run.tags
