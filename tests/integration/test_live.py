"""Live tools run as ad-hoc Dagster ops: the run, its tags and its outcome are in the instance."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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

    from dagster import DagsterInstance, DagsterRunStatus

    run = runner.instance().get_run_by_id(result.run_id)
    assert run is not None and run.status == DagsterRunStatus.SUCCESS
    assert run.job_name == "live__warehouse_execute"
    assert run.tags[TAG_TOOL] == "warehouse_execute"
    assert run.tags[TAG_CAUSE] == "agent checking a row count"
    args = json.loads(run.tags[TAG_ARGUMENTS])
    assert args["password"] == "***" and args["limit"] == 5
    assert "123-45-6789" not in run.tags[TAG_ARGUMENTS] and "hunter2" not in json.dumps(run.tags)
    # In the instance the Dagster UI reads, with no compute logs captured (a live op prints nothing, and
    # capturing would redirect a stdio gateway's protocol stream for the length of the run).
    with DagsterInstance.from_config(str(tmp_path / "dagster")) as ui:
        assert ui.get_run_by_id(result.run_id) is not None
    assert not [p for p in (tmp_path / "dagster").rglob("*") if "compute_logs" in p.parts]


def test_failing_live_op_raises_and_is_recorded_as_failed(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    runner = LiveRunner(tmp_path / "dagster")

    class Boom(Exception):
        code = "query_failed"

    def fail() -> None:
        raise Boom("no such table 'a@b.c'")

    with pytest.raises(Boom):
        runner.run("warehouse_execute", fail, arguments={"sql": "select 1"})
    with pytest.raises(Boom):  # the fast path, recorded by the audit child process
        runner.run("warehouse_execute", fail, arguments={"sql": "select 2"}, effects="none")
    runner.flush()
    from dagster import DagsterRunStatus, RunsFilter

    instance = runner.instance()
    runs = instance.get_runs(RunsFilter(tags={TAG_TOOL: "warehouse_execute"}))
    assert [r.status for r in runs] == [DagsterRunStatus.FAILURE] * 2
    for run in runs:  # the history keeps the error's type and code, never its text
        messages = " ".join(f"{e.message} {e.dagster_event!r}" for e in instance.all_logs(run.run_id))
        assert "Boom (query_failed)" in messages and "a@b.c" not in messages
    # Nothing of it in the process's own output (the MCP host's log): no stack trace, no paths.
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err and "a@b.c" not in out + err, err[-2000:]


def test_read_only_fast_path_records_the_same_audit_run(tmp_path: Path) -> None:
    from dagster import DagsterRunStatus, RunsFilter

    runner = LiveRunner(tmp_path / "dagster")
    result = runner.run(
        "warehouse_execute",
        lambda: {"rows": 1},
        arguments={"sql": "select count(*) from t where email = 'a@b.c'"},
        cause="fast",
        effects="none",
    )
    assert result.value == {"rows": 1}

    class Refused(Exception):
        code = "query_failed"

    def fail() -> None:
        raise Refused("value 'a@b.c' is not valid")

    with pytest.raises(Refused):
        runner.run("warehouse_execute", fail, arguments={"sql": "select 1"}, effects="none")
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


def _journal_files(runner: LiveRunner) -> list[Path]:
    folder = runner.journal.folder
    return sorted(folder.iterdir()) if folder.is_dir() else []


def _journal_records(runner: LiveRunner) -> list[dict]:
    return [json.loads(line) for p in _journal_files(runner) for line in p.read_text().splitlines()]


def test_workspace_calls_journal_a_redacted_intent_until_their_audit_run_is_recorded(tmp_path: Path) -> None:
    from dagster import DagsterRunStatus

    runner = LiveRunner(tmp_path / "dagster")
    seen: list[dict] = []

    def call() -> str:
        # the call's start is on disk (fsynced) before the call's first effect
        seen.extend(_journal_records(runner))
        return "written"

    result = runner.run(
        "snowfakery.run_recipe",
        call,
        arguments={"recipe": "a.yml", "password": "hunter2", "sql": "select 'sensitive-literal'"},
        cause="journal test",
        effects="workspace",
    )
    owner, intent = seen
    assert result.value == "written" and intent["k"] == "b"
    assert intent["id"] == result.run_id and intent["tool"] == "snowfakery.run_recipe"
    assert owner["pid"] == os.getpid() and intent["t"]
    assert intent["tags"][TAG_CAUSE] == "journal test" and intent["tags"]["ade/path"] == "fast"
    assert "hunter2" not in json.dumps(intent) and "sensitive-literal" not in json.dumps(intent)
    # its outcome followed before the answer left, in the same journal
    assert [r["k"] for r in _journal_records(runner) if r.get("id") == result.run_id][:2] == ["b", "e"]
    runner.flush()
    assert _journal_files(runner) == []  # recorded, so dropped
    run = runner.instance().get_run_by_id(result.run_id)
    assert run is not None and run.status == DagsterRunStatus.SUCCESS
    assert run.job_name == "live__snowfakery_run_recipe" and run.tags == {**intent["tags"], **run.tags}
    assert run.tags["ade/path"] == "fast" and "ade/outcome" not in run.tags


_DYING_GATEWAY = """
import sys, time
from pathlib import Path
from ade_platform.live import LiveRunner

def call():
    print("running", flush=True)
    time.sleep(120)  # killed here: after its intent, before its audit run

LiveRunner(Path(sys.argv[1])).run(
    "snowfakery.run_recipe", call, arguments={"token": "tok-123", "recipe": "a.yml"}, effects="workspace"
)
"""


def test_an_intent_whose_gateway_died_is_recorded_as_unknown_by_the_next_runner(tmp_path: Path) -> None:
    from dagster import DagsterRunStatus, RunsFilter

    home = tmp_path / "dagster"
    repo = Path(__file__).resolve().parents[2]
    gateway = subprocess.Popen(
        [sys.executable, "-c", _DYING_GATEWAY, str(home)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    assert gateway.stdout is not None and gateway.stdout.readline().strip() == "running"
    gateway.send_signal(signal.SIGKILL)
    gateway.wait()
    runner = LiveRunner(home)
    (orphan,) = _journal_files(runner)
    (run_id,) = [r["id"] for r in _journal_records(runner) if r["k"] == "b"]
    assert "tok-123" not in orphan.read_text()

    assert runner.recover() == 1
    assert runner.recover() == 0  # claimed once
    runner.flush()
    assert _journal_files(runner) == []
    run = runner.instance().get_run_by_id(run_id)
    assert run is not None and run.status == DagsterRunStatus.FAILURE
    assert run.job_name == "live__snowfakery_run_recipe" and run.tags["ade/outcome"] == "unknown"
    assert (
        run.tags[TAG_TOOL] == "snowfakery.run_recipe"
        and json.loads(run.tags[TAG_ARGUMENTS])["token"] == "***"
    )
    messages = " ".join(str(e.dagster_event) + e.message for e in runner.instance().all_logs(run_id))
    assert "outcome unknown: the gateway stopped before recording it" in messages
    runs = runner.instance().get_runs(RunsFilter(tags={TAG_TOOL: "snowfakery.run_recipe"}))
    assert [r.run_id for r in runs] == [run_id]


def test_intents_of_a_live_gateway_are_left_alone(tmp_path: Path) -> None:
    runner = LiveRunner(tmp_path / "dagster")
    intent = runner.journal.write("0" * 8 + "-0000-4000-8000-" + "0" * 12, "snowfakery.run_recipe", {})
    assert LiveRunner(tmp_path / "dagster").recover() == 0  # its owner (this process) is alive
    assert intent.is_file()


def test_every_fast_call_is_journaled_before_its_answer_and_drained_once_recorded(tmp_path: Path) -> None:
    runner = LiveRunner(tmp_path / "dagster")
    result = runner.run(
        "warehouse_execute", lambda: {"rows": 1}, arguments={"sql": "select 1"}, effects="none"
    )
    ended = [r for r in _journal_records(runner) if r.get("id") == result.run_id]
    assert ended and ended[0]["k"] == "e" and ended[0]["err"] is None  # before flush: on disk already
    assert "audit_kept" not in result.stamp()
    runner.flush()
    assert _journal_files(runner) == []
    assert runner.instance().get_run_by_id(result.run_id) is not None


def test_a_journal_that_cannot_be_written_is_said_in_the_answer_and_logged_with_a_code(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "ade-audit-journal").write_text("a file where the journal's folder should be")
    runner = LiveRunner(home)
    with caplog.at_level("WARNING", logger="ade.live"):
        result = runner.run("warehouse_execute", lambda: 1, arguments={"sql": "select 1"}, effects="none")
    stamp = result.stamp()
    assert stamp["audit_kept"] is False and stamp["audit_error"] == "audit_journal_unwritable"
    (line,) = [r for r in caplog.records if "audit_journal_unwritable" in r.getMessage()]
    assert line.exc_info is None  # one line, no traceback
    runner.flush()  # the worker still records it when it can
    assert runner.instance().get_run_by_id(result.run_id) is not None


def test_a_run_left_unfinished_is_finished_on_replay_never_inserted_twice(tmp_path: Path) -> None:
    """What a recorder killed half-way (or a gateway killed during an in-line run) leaves: a run that started
    and never ended. Replaying its journal entry finishes it."""
    import time
    import uuid

    from dagster import DagsterRunStatus, RunsFilter

    from ade_platform.audit_record import Audit, Recorder, job_for

    runner = LiveRunner(tmp_path / "dagster")
    instance = runner.instance()
    known, unknown = str(uuid.uuid4()), str(uuid.uuid4())
    for run_id in (known, unknown):
        run = instance.create_run_for_job(job_for("warehouse_execute"), run_id=run_id, tags={TAG_TOOL: "w"})
        from dagster import DagsterEvent, DagsterEventType

        start = DagsterEvent(event_type_value=DagsterEventType.RUN_START.value, job_name=run.job_name)
        instance.report_dagster_event(start, run_id)
    assert {r.status for r in instance.get_runs(RunsFilter(tags={TAG_TOOL: "w"}))} == {
        DagsterRunStatus.STARTED
    }
    recorder = Recorder(instance)
    batch = [
        Audit("warehouse_execute", known, {TAG_TOOL: "w"}, None, 3.0, time.time()),
        Audit(
            "warehouse_execute", unknown, {TAG_TOOL: "w", "ade/outcome": "unknown"}, "x", None, time.time()
        ),
    ]
    assert recorder.record(batch) == {known: None, unknown: None}
    assert recorder.record(batch) == {known: None, unknown: None}  # again: skipped, already finished
    runs = {r.run_id: r for r in instance.get_runs(RunsFilter(tags={TAG_TOOL: "w"}))}
    assert set(runs) == {known, unknown}
    assert runs[known].status == DagsterRunStatus.SUCCESS
    assert runs[unknown].status == DagsterRunStatus.FAILURE and runs[unknown].tags["ade/outcome"] == "unknown"


def test_batches_record_many_runs_with_their_tags_and_times(tmp_path: Path) -> None:
    import time
    import uuid

    from dagster import DagsterRunStatus, RunsFilter

    from ade_platform.audit_record import Audit, Recorder

    runner = LiveRunner(tmp_path / "dagster")
    instance = runner.instance()
    now = time.time()
    batch = [
        Audit("warehouse_execute", str(uuid.uuid4()), {TAG_TOOL: "warehouse_execute", "n": str(n)},
              "Boom (query_failed)" if n % 5 == 0 else None, 20.0, now + n)
        for n in range(30)
    ]  # fmt: skip
    assert set(Recorder(instance).record(batch).values()) == {None}
    records = {
        r.dagster_run.run_id: r
        for r in instance.get_run_records(RunsFilter(tags={TAG_TOOL: "warehouse_execute"}))
    }
    assert len(records) == 30
    for n, audit in enumerate(batch):
        record = records[audit.run_id]
        assert record.dagster_run.job_name == "live__warehouse_execute" and record.dagster_run.tags[
            "n"
        ] == str(n)
        assert record.dagster_run.status == (
            DagsterRunStatus.FAILURE if n % 5 == 0 else DagsterRunStatus.SUCCESS
        )
        assert abs(record.start_time - (now + n)) < 0.01 and abs(record.end_time - (now + n + 0.02)) < 0.01
        kinds = [e.dagster_event.event_type_value for e in instance.all_logs(audit.run_id)]
        assert kinds[0] == "PIPELINE_START" and kinds[-1] in ("PIPELINE_SUCCESS", "PIPELINE_FAILURE")
    failed = batch[0].run_id
    assert "Boom (query_failed)" in " ".join(str(e.dagster_event.message) for e in instance.all_logs(failed))
