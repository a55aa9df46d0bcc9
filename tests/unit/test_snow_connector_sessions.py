"""The connector transport keeps one logged-in session per snow connection name, against a real fakesnow server:
statements and pinned runners reuse it, another name gets its own, a busy session makes a caller wait at most
the statement timeout, and a closed session logs in again on the next statement."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.clients.snow_connector import Session, SnowConnector, connection_parameters
from ade_platform.lib.snowflake.errors import CliFailure
from tests.fakes.snowflake_stack import CONNECTION, DATABASE, SCHEMA, SnowflakeStack, start_stack

OTHER = "reporting"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SnowflakeStack]:
    with start_stack(tmp_path_factory.mktemp("fakesnow")) as running:
        # A second connection name to the same server, in connections.toml as the CLI also reads it.
        (running.config_file.parent / "connections.toml").write_text(
            f'[{OTHER}]\naccount = "fakesnow"\nuser = "fake"\npassword = "snow"\nhost = "127.0.0.1"\n'
            f'port = {running.port}\nprotocol = "http"\ndatabase = "{DATABASE}"\nschema = "{SCHEMA}"\n'
        )
        yield running


def runner(stack: SnowflakeStack, connection: str = CONNECTION) -> SnowConnector:
    return SnowConnector(
        connection=connection,
        config_file=str(stack.config_file),
        timeout=20,
        database=DATABASE,
        schema=SCHEMA,
    )


def test_statements_and_pinned_runners_share_one_login(stack: SnowflakeStack) -> None:
    first = runner(stack)
    assert first.sql("SELECT 1 AS one") == [{"ONE": 1}]
    session = first.session()
    login = session._conn
    assert login is not None

    again = runner(stack)  # a new runner object for the same name: the same session
    pinned = first.pinned(DATABASE, "PROD_HR")  # another context on the same session
    again.sql("SELECT 2 AS two")
    pinned.sql("SELECT 3 AS three")
    first.sql("SELECT 4 AS four")

    assert again.session() is session and pinned.session() is session
    assert session._conn is login, "a statement logged in again instead of reusing the session"


def test_another_connection_name_has_its_own_session(stack: SnowflakeStack) -> None:
    default, other = runner(stack), runner(stack, OTHER)
    other.sql("SELECT 1 AS one")
    default.sql("SELECT 1 AS one")
    assert other.session() is not default.session()
    assert connection_parameters(OTHER, stack.config_file)["port"] == stack.port


def test_a_busy_session_makes_the_caller_wait_at_most_the_timeout(stack: SnowflakeStack) -> None:
    session = Session(connection_parameters(CONNECTION, stack.config_file), timeout=0.2)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            session.execute("SELECT 1", DATABASE, SCHEMA)
        except BaseException as exc:  # the outcome is asserted below
            outcome.append(exc)

    session.lock.acquire()  # another statement holds the session
    try:
        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        caller.join(30)  # generous: only a caller that never gives up stays here
        assert not caller.is_alive(), "the caller waited for the busy session past its timeout"
        assert isinstance(outcome[0], CliFailure) and outcome[0].code == "QUERY_TIMEOUT"
        assert session._conn is None, "nothing runs (not even the login) while the session is busy"
    finally:
        session.lock.release()
    session.timeout = 20
    assert session.execute("SELECT 1 AS one", DATABASE, SCHEMA) == [{"ONE": 1}]
    session.close()


def test_a_closed_session_logs_in_again(stack: SnowflakeStack) -> None:
    session = Session(connection_parameters(CONNECTION, stack.config_file), timeout=20)
    session.execute("SELECT 1 AS one", DATABASE, SCHEMA)
    before = session._conn
    session.close()
    assert session.execute("SELECT 1 AS one", DATABASE, SCHEMA) == [{"ONE": 1}]
    assert session._conn is not None and session._conn is not before
    session.close()


def test_unknown_connection_name_is_a_clear_failure(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[connections.a]\naccount = 'x'\n")
    with pytest.raises(CliFailure) as caught:
        connection_parameters("missing", tmp_path / "config.toml")
    assert caught.value.code == "AUTH_FAILED"
