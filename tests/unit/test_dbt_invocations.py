"""Invocations read from dbt's own log (text and JSON lines), bounded, with their outcome and error.

The logs here are written by the test in the two formats dbt 1.5+ uses; `tests/mcp/test_dbt_live.py` reads logs
that a real dbt wrote.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ade_platform.lib.dbt import invocations
from ade_platform.lib.dbt.invocations import InvocationLog, newest_invocation, recent_invocations

ESC = "\x1b[0m"


def _text(inv: str, clock: str, lines: list[tuple[str, str, str]]) -> str:
    """One invocation in dbt's text ("debug") file format: a separator, then `time [level] [thread]: msg`."""
    out = f"\n\n{'=' * 30} {clock} | {inv} {'=' * 30}\n"
    for at, level, msg in lines:
        out += f"{ESC}{at} [{level:<5}] [MainThread]: {msg}\n"
    return out


def _opening(clock: str, invocation_command: str) -> list[tuple[str, str, str]]:
    """The two lines dbt opens an invocation with: its version, and a tenth of a second later its arguments."""
    then = (datetime.strptime(clock, "%H:%M:%S.%f") + timedelta(seconds=0.1)).strftime("%H:%M:%S.%f")
    arguments = f"running dbt with arguments {{'invocation_command': '{invocation_command}'}}"
    return [(clock, "info", "Running with dbt=1.11.0"), (then, "debug", arguments)]


def _json(inv: str, name: str, ts: str, level: str = "debug", msg: str = "", **data: object) -> str:
    info = {"invocation_id": inv, "name": name, "ts": ts, "level": level, "msg": msg, "code": "X"}
    return json.dumps({"data": data, "info": info}) + "\n"


def _write_log(project: Path, text: str, mtime: float | None = None) -> Path:
    path = project / "logs" / "dbt.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


GREEN = _text(
    "aaaaaaaa-0000-0000-0000-000000000001",
    "10:00:00.100000",
    [
        *_opening("10:00:00.100000", "dbt build --profiles-dir ."),
        ("10:00:03.000000", "info", "1 of 1 OK created sql view model main.a ..... [OK in 0.1s]"),
        ("10:00:04.000000", "debug", "Wrote artifact RunExecutionResult to /somewhere/target/run_results.json"),
        ("10:00:04.100000", "debug", "Command `dbt build` succeeded at 10:00:04.100000 after 4.0 seconds"),
    ],
)  # fmt: skip
RUNTIME_ERROR = _text(
    "aaaaaaaa-0000-0000-0000-000000000002",
    "10:05:00.000000",
    [
        *_opening("10:05:00.000000", "dbt run -s b"),
        ("10:05:02.000000", "error", "1 of 1 ERROR creating sql view model main.b ..... [ERROR in 0.05s]"),
        ("10:05:02.500000", "error", "Failure in model b (models/b.sql)"),
        ("10:05:02.600000", "error", '  Runtime Error in model b (models/b.sql)\n  Binder Error: Referenced column "name" not found'),
        ("10:05:02.900000", "debug", "Command `dbt run` failed at 10:05:02.900000 after 2.9 seconds"),
    ],
)  # fmt: skip
PARSE_ERROR = _text(
    "aaaaaaaa-0000-0000-0000-000000000003",
    "10:10:00.000000",
    [
        *_opening("10:10:00.000000", "dbt build"),
        ("10:10:01.000000", "error", "Encountered an error:\nCompilation Error\n  Model 'model.shop.b' (models/b.sql) depends on a node named 'nope' which was not found"),
        ("10:10:01.100000", "debug", "Command `dbt build` failed at 10:10:01.100000 after 1.1 seconds"),
    ],
)  # fmt: skip
DAY = datetime(2026, 3, 4, 10, 30, tzinfo=UTC).timestamp()


def test_text_log_outcomes_commands_errors_and_failed_nodes(tmp_path: Path) -> None:
    _write_log(tmp_path, GREEN + RUNTIME_ERROR + PARSE_ERROR, DAY)
    green, runtime, parse = recent_invocations(tmp_path)
    assert (green.status, green.command, green.error) == ("success", "build", None)
    assert green.started_at == datetime(2026, 3, 4, 10, 0, 0, 100000, tzinfo=UTC)
    assert green.finished_at == datetime(2026, 3, 4, 10, 0, 4, 100000, tzinfo=UTC)

    assert (runtime.status, runtime.command, runtime.failed_nodes) == ("error", "run", ("b",))
    assert runtime.error is not None and 'Referenced column "name" not found' in runtime.error
    assert "1 of 1 ERROR" not in runtime.error  # progress lines are not the error

    assert parse.status == "parse_error" and parse.command == "build"
    assert parse.error is not None and parse.error.startswith("Compilation Error")
    assert parse.failed_nodes == ("model.shop.b",) and parse.wrote_artifacts is False
    assert newest_invocation(tmp_path) == parse
    assert parse.to_dict()["finished_at"] == "2026-03-04T10:10:01Z"


def test_json_lines_and_the_run_results_of_the_same_invocation(tmp_path: Path) -> None:
    inv = "bbbbbbbb-0000-0000-0000-000000000001"
    target = tmp_path / "target"
    log = (
        _json(inv, "MainReportVersion", "2026-03-04T09:00:00.000Z", "info", "Running with dbt=1.11.0")
        + _json(inv, "MainReportArgs", "2026-03-04T09:00:00.1Z", args={"invocation_command": "dbt source freshness"})
        + _json(inv, "LogFreshnessResult", "2026-03-04T09:00:02Z", "error", "1 of 1 ERROR STALE", status="error",
                node_info={"unique_id": "source.shop.raw.orders"})
        + _json(inv, "ArtifactWritten", "2026-03-04T09:00:03Z", artifact_type="RunExecutionResult",
                artifact_path=str(target / "run_results.json"))
        + '{"data": {}, "info": {"invocation_id": "cut-off'  # a line a concurrent write cut short
        + "\n"
        + _json(inv, "CommandCompleted", "2026-03-04T09:00:03.5Z", completed_at="2026-03-04T09:00:03.4Z",
                success=False, command="dbt source freshness")
    )  # fmt: skip
    _write_log(tmp_path, log)
    found = newest_invocation(tmp_path, target_path=target)
    assert found is not None
    assert (found.command, found.status, found.failed_nodes) == (
        "source freshness",
        "error",
        ("source.shop.raw.orders",),
    )
    assert found.wrote_artifacts is False  # no run_results.json there
    target.mkdir()
    (target / "run_results.json").write_text(json.dumps({"metadata": {"invocation_id": inv}, "results": []}))
    assert newest_invocation(tmp_path, target_path=target).wrote_artifacts is True  # type: ignore[union-attr]
    (target / "run_results.json").write_text(json.dumps({"metadata": {"invocation_id": "another"}}))
    assert newest_invocation(tmp_path, target_path=target).wrote_artifacts is False  # type: ignore[union-attr]


def test_a_parse_error_in_json_lines_and_a_log_holding_both_formats(tmp_path: Path) -> None:
    inv = "cccccccc-0000-0000-0000-000000000001"
    exc = "Parsing Error\n  Error reading shop: schema.yml - Runtime Error\n    Syntax error near line 4"
    log = GREEN + (
        _json(inv, "MainReportVersion", "2026-03-04T10:20:00Z", "info")
        + _json(inv, "MainReportArgs", "2026-03-04T10:20:00Z", args={"invocation_command": "dbt build -s x"})
        + _json(inv, "MainEncounteredError", "2026-03-04T10:20:01Z", "error", "Encountered an error:\n" + exc, exc=exc)
        + _json(inv, "CommandCompleted", "2026-03-04T10:20:01Z", success=False, command="dbt build")
    )  # fmt: skip
    _write_log(tmp_path, log, DAY)
    green, parse = recent_invocations(tmp_path)
    assert green.status == "success"
    assert (parse.status, parse.command, parse.error) == ("parse_error", "build", exc)


def test_an_invocation_without_an_outcome_is_running_until_its_log_goes_silent(tmp_path: Path) -> None:
    running = _text(
        "dddddddd-0000-0000-0000-000000000001",
        "10:00:00.000000",
        [*_opening("10:00:00.000000", "dbt build"),
         ("10:00:01.000000", "info", "1 of 9 START sql table model main.big ..... [RUN]")],
    )  # fmt: skip
    now = time.time()
    clock = datetime.fromtimestamp(now, UTC).strftime("%H:%M:%S.%f")
    _write_log(tmp_path, running.replace("10:00:0", clock[:7]), now)
    assert newest_invocation(tmp_path).status == "running"  # type: ignore[union-attr]
    _write_log(tmp_path, running, now - invocations.SILENT_SECONDS - 60)
    stopped = newest_invocation(tmp_path)
    assert stopped is not None and stopped.status == "error" and "stopped" in (stopped.error or "")
    # An invocation followed by another one never finishes: it was killed.
    _write_log(tmp_path, running + GREEN, DAY)
    killed, green = recent_invocations(tmp_path)
    assert killed.status == "error" and green.status == "success"


def test_the_read_is_bounded_and_still_finds_the_start_of_a_long_invocation(tmp_path: Path) -> None:
    noise = [("10:00:01.000000", "debug", "SQL status: OK in 0.001 seconds " + "x" * 200)] * 8000  # ~2 MB
    lines = [
        *_opening("10:00:00.000000", "dbt test"),
        *noise,
        ("10:09:00.000000", "error", "Failure in test not_null_orders_id (models/schema.yml)"),
        ("10:09:00.050000", "info", "Done. PASS=11 WARN=0 ERROR=1 SKIP=0 NO-OP=0 TOTAL=12"),
        ("10:09:00.100000", "debug", "Command `dbt test` failed at 10:09:00.100000 after 540 seconds"),
    ]
    path = _write_log(
        tmp_path, GREEN + _text("eeeeeeee-0000-0000-0000-000000000001", "10:00:00.000000", lines), DAY
    )
    assert path.stat().st_size > 2 * invocations.TAIL_BYTES
    found = recent_invocations(tmp_path)
    assert [i.invocation_id for i in found] == [
        "eeeeeeee-0000-0000-0000-000000000001"
    ]  # GREEN is out of reach
    (test,) = found
    assert (test.command, test.status, test.failed_nodes) == ("test", "error", ("not_null_orders_id",))
    assert test.started_at == datetime(2026, 3, 4, 10, 0, tzinfo=UTC)


def test_errors_lose_paths_outside_the_project_and_secrets_and_are_capped(tmp_path: Path) -> None:
    project, profiles = (
        tmp_path / "shop",
        tmp_path / "alice" / ".dbt" / "profiles.yml",
    )  # one outside the project
    secret_error = (
        f"Runtime Error\n  Could not read {project}/models/x.sql and {profiles}: "
        "password=hunter22 rejected for postgres://bob:s3cr3tpass@db.internal:5432/prod\n" + "y" * 5000
    )
    lines = [
        ("10:00:00.000000", "info", "Running with dbt=1.11.0"),
        ("10:00:00.500000", "error", secret_error),
        ("10:00:01.000000", "debug", "Command `dbt debug` failed at 10:00:01.000000 after 1 seconds"),
    ]
    _write_log(project, _text("ffffffff-0000-0000-0000-000000000001", "10:00:00.000000", lines), DAY)
    error = newest_invocation(project).error  # type: ignore[union-attr]
    assert error is not None and len(error) <= invocations.MAX_ERROR_CHARS
    assert "models/x.sql" in error and str(project) not in error and str(profiles.parent) not in error
    assert "hunter22" not in error and "s3cr3tpass" not in error


def test_text_times_take_their_date_from_the_file_across_midnight(tmp_path: Path) -> None:
    lines = [
        ("23:59:58.000000", "info", "Running with dbt=1.11.0"),
        ("00:00:02.000000", "debug", "Command `dbt build` succeeded at 00:00:02.000000 after 4 seconds"),
    ]
    after_midnight = datetime(2026, 3, 5, 0, 0, 3, tzinfo=UTC).timestamp()
    _write_log(
        tmp_path, _text("12121212-0000-0000-0000-000000000001", "23:59:58.000000", lines), after_midnight
    )
    found = newest_invocation(tmp_path)
    assert found is not None
    assert found.started_at == datetime(2026, 3, 4, 23, 59, 58, tzinfo=UTC)
    assert found.finished_at == datetime(2026, 3, 5, 0, 0, 2, tzinfo=UTC)


def test_the_log_is_parsed_again_only_when_it_changes(tmp_path: Path) -> None:
    assert newest_invocation(tmp_path) is None  # no log: no invocation
    path = _write_log(tmp_path, GREEN, DAY)
    log = InvocationLog(tmp_path)
    first = log.recent()
    assert log.recent() is first  # a stat, not a read
    with open(path, "a") as fh:
        fh.write(PARSE_ERROR)
    assert [i.status for i in log.recent()] == ["success", "parse_error"]
    assert InvocationLog(tmp_path, log_path=tmp_path / "elsewhere").recent() == []
