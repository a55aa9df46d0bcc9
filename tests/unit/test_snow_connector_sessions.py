"""The connector transport keeps one logged-in session per snow connection name, against a real fakesnow server:
statements and pinned runners reuse it, another name gets its own, a busy session makes a caller wait at most
the statement timeout, a closed session logs in again on the next statement, and withheld (DATA) results live
on a session of their own that no answered statement shares."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.clients.snow_connector import Session, SnowConnector, connection_parameters
from ade_platform.lib.guard import GuardPolicy
from ade_platform.lib.snowflake.errors import CliFailure
from ade_platform.lib.snowflake.proxy import Proxy, ProxyLimits
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


def test_a_withheld_result_is_out_of_reach_of_the_answering_session(stack: SnowflakeStack) -> None:
    """Defence in depth behind the guard's `session_reach` refusals: a dynamic PIVOT's result (columns named
    after cell values, withheld by the proxy) is not on the session where answered statements run, so even a
    statement the guard wrongly let through could not describe it there, however far back it looks."""
    answering = runner(stack)
    proxy = Proxy(answering, GuardPolicy(), ProxyLimits())
    pivot = "SELECT * FROM (SELECT id, tier FROM customers) PIVOT(COUNT(id) FOR tier IN (ANY ORDER BY tier))"
    answer = proxy.execute_sql(pivot)
    assert answer["classification"] == "DATA" and answer["names_withheld"]
    assert "platinum-qz7k1" not in json.dumps(answer)

    withheld = answering.withheld()
    assert withheld.session() is not answering.session()
    assert withheld.withheld().session() is withheld.session()
    assert withheld.pinned(DATABASE, SCHEMA).session() is withheld.session()
    answering.sql("SELECT 1 AS one")  # the answering session has a history of its own
    seen = 0
    for n in range(1, 12):  # bypassing the guard: the n-th statement of the answering session, from its login
        try:
            described = answering.sql(f"DESCRIBE RESULT LAST_QUERY_ID({n})")
        except CliFailure:
            break  # fewer statements than n
        seen += 1
        assert "platinum-qz7k1" not in json.dumps(described), n
    assert seen >= 2, "the answering session's own statements were described"
    # The check looked in the right place: the pivot's result is where the proxy ran it.
    assert "platinum-qz7k1" in json.dumps(withheld.sql("DESCRIBE RESULT LAST_QUERY_ID(-1)"))
