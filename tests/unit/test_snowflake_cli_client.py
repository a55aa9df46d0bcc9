"""The snow CLI client against a stand-in executable: command line, output parsing, errors, timeouts."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from ade_platform.clients.snowflake.base import check_statement_text, classify_failure
from ade_platform.clients.snowflake.cli import SnowCli, error_text
from ade_platform.lib.snowflake.errors import CliFailure, SnowflakeError
from ade_platform.lib.snowflake.objects import KINDS, parse_name

FAKE = """#!{python}
import json, os, sys, time
argv = sys.argv[1:]
open(os.environ["FAKE_SNOW_LOG"], "a").write(json.dumps(argv) + "\\n")
argv = argv[2:] if argv[:1] == ["--config-file"] else argv
query = argv[argv.index("--query") + 1] if "--query" in argv else ""
if "sleep" in query:
    open(os.environ["FAKE_SNOW_LOG"] + ".pid", "w").write(str(os.getpid()))
    time.sleep(60)
elif "fail" in query:
    sys.stderr.write("\\u256d\\u2500 Error \\u2500\\u256e\\n\\u2502 002003 (42S02): Object 'X' does not exist \\u2502\\n"
                     "\\u2502 or not authorized. \\u2502\\n\\u2570\\u2500\\u256f\\n")
    sys.exit(1)
elif ";" in query:
    print(json.dumps([[{{"A": 1}}], [{{"B": 2}}]]))
elif argv[:2] == ["object", "list"]:
    print("warning: something\\n" + json.dumps([{{"name": "T"}}]))
else:
    print(json.dumps([{{"X": 1}}]))
"""


@pytest.fixture
def fake_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[SnowCli, Path]:
    script = tmp_path / "snow"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(0o755)
    log = tmp_path / "calls.log"
    monkeypatch.setenv("FAKE_SNOW_LOG", str(log))
    cli = SnowCli(
        connection="dev",
        cli_path=str(script),
        config_file="/cfg/config.toml",
        timeout=20,
        database="DB",
        schema="APP",
        role="R",
    )
    return cli, log


def calls(log: Path) -> list[list[str]]:
    return [json.loads(line)[2:] for line in log.read_text().splitlines()]


def test_command_line_pins_context_and_disables_templating(fake_cli: tuple[SnowCli, Path]) -> None:
    cli, log = fake_cli
    assert cli.sql("SELECT 1") == [{"X": 1}]
    assert json.loads(log.read_text().splitlines()[0])[:2] == ["--config-file", "/cfg/config.toml"]
    argv = calls(log)[0]
    assert argv[:5] == ["sql", "--query", "SELECT 1", "--enable-templating", "NONE"]
    assert argv[argv.index("--format") + 1] == "JSON_EXT"
    for flag, value in [("--connection", "dev"), ("--database", "DB"), ("--schema", "APP"), ("--role", "R")]:
        assert argv[argv.index(flag) + 1] == value
    assert not [a for a in argv if "password" in a.lower()]


def test_object_commands_and_batches(fake_cli: tuple[SnowCli, Path]) -> None:
    cli, log = fake_cli
    assert cli.object_list(KINDS["table"], database="DB", schema="APP", like="C%") == [{"name": "T"}]
    assert cli.sql_batch(["SELECT 1", "SELECT 2"]) == [[{"A": 1}], [{"B": 2}]]
    cli.object_describe(parse_name("t", "table", default_database="DB", default_schema="APP"))
    listed, batch, described = calls(log)
    assert listed[:7] == ["object", "list", "table", "--like", "C%", "--in", "schema"] and listed[7] == "APP"
    assert batch[batch.index("--query") + 1] == "SELECT 1;\nSELECT 2;"
    assert described[:4] == ["object", "describe", "table", "DB.APP.T"]


def test_errors_are_parsed_out_of_the_box(fake_cli: tuple[SnowCli, Path]) -> None:
    cli, _ = fake_cli
    with pytest.raises(CliFailure) as err:
        cli.sql("SELECT fail")
    assert err.value.code == "OBJECT_NOT_FOUND" and err.value.sf_code == "002003"
    assert err.value.raw == "002003 (42S02): Object 'X' does not exist\nor not authorized."
    assert (
        error_text("", "╭─ Error ─╮\n│ Connection dev is not configured │\n╰──╯")
        == "Connection dev is not configured"
    )
    assert classify_failure("Connection dev is not configured")[0] == "AUTH_FAILED"
    assert classify_failure("Could not connect to Snowflake. Reason: 250001: ...")[0] == "AUTH_FAILED"
    assert (
        classify_failure("390100 (08004): Incorrect username or password was specified.")[0] == "AUTH_FAILED"
    )
    assert (
        classify_failure("003001 (42501): SQL access control error: Insufficient privileges")[0]
        == "PERMISSION_DENIED"
    )
    assert classify_failure("001003 (42000): SQL compilation error: syntax error")[0] == "QUERY_FAILED"


def test_timeout_kills_the_process_group(fake_cli: tuple[SnowCli, Path], tmp_path: Path) -> None:
    cli, log = fake_cli
    quick = SnowCli(cli_path=cli.cli_path, timeout=1.5)
    started = time.monotonic()
    with pytest.raises(CliFailure) as err:
        quick.sql("SELECT sleep")
    assert err.value.code == "QUERY_TIMEOUT" and time.monotonic() - started < 15
    pid = int(Path(str(log) + ".pid").read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the snow process survived its timeout")


def test_missing_cli_and_client_commands(tmp_path: Path) -> None:
    with pytest.raises(CliFailure) as err:
        SnowCli(cli_path=str(tmp_path / "nope")).sql("SELECT 1")
    assert err.value.code == "CLI_NOT_FOUND" and str(tmp_path) not in err.value.raw
    for sql in [
        "!source /etc/passwd",
        "/* c */ !result 01ab",
        "-- c\n  !queries",
        "SELECT 1;>",
        "select 1\n!edit",
    ]:
        with pytest.raises(SnowflakeError) as refused:
            check_statement_text(sql)
        assert refused.value.code == "WRITE_REFUSED"
    check_statement_text("SELECT a FROM t WHERE b != 1")
