"""One call never reads another's withheld result, nor shadows a table for the next caller (issue 23, section 4).

The connector transport keeps one Snowflake session per connection name, so a statement can reach what an
earlier statement of the session left behind: its result (LAST_QUERY_ID, RESULT_SCAN, DESCRIBE RESULT),
session variables, temporary objects. The attack that started this: a dynamic PIVOT names its result columns
after cell values; execute_sql answers it with the shape only (`column_<n>`), and a following
`DESCRIBE RESULT LAST_QUERY_ID()` returned the real names. The fake server (tests/fakes/fakesnow_server.py)
implements LAST_QUERY_ID, DESCRIBE RESULT and dynamic PIVOT as Snowflake does, so each attack here is real:
every one is refused with a structured error (SESSION_STATE_REFUSED, E1013) and no canary value in the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ade_platform.config import load_settings
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.snowflake import build_with
from mcp_bridge.toolsets.snowflake.service import SnowflakeRuntime
from tests.fakes.snowflake_runner import NullLiveRunner
from tests.fakes.snowflake_stack import CANARIES, SnowflakeStack, connect, start_stack
from tests.helpers import call_tools

pytestmark = pytest.mark.integration

# Dynamic pivots over canary columns: their result columns are named after the canaries.
PIVOTS = [
    "SELECT * FROM (SELECT id, tier FROM customers) PIVOT(COUNT(id) FOR tier IN (ANY ORDER BY tier))",
    "SELECT * FROM (SELECT id, email FROM customers) PIVOT(COUNT(id) FOR email IN (ANY))",
    "SELECT * FROM (SELECT id, note FROM orders) PIVOT(COUNT(id) FOR note IN (SELECT note FROM orders))",
    "WITH p AS (SELECT * FROM (SELECT id, email FROM customers) PIVOT(COUNT(id) FOR email IN (ANY))) "
    "SELECT * FROM p",
]
PIVOT_CANARIES = ["platinum-qz7k1", "qz7k1-alice@example.com", "cnry-note-6620"]
# Every way found to reach an earlier statement's result or a session-carried value.
REACHES = [
    "DESCRIBE RESULT LAST_QUERY_ID()",
    "desc result last_query_id(-1)",
    "DESCRIBE RESULT LAST_QUERY_ID(-3)",
    "DESCRIBE RESULT LAST_QUERY_ID(2)",
    "SELECT LAST_QUERY_ID()",
    "SELECT LAST_QUERY_ID(-2) AS q, CURRENT_DATE()",
    'SELECT "LAST_QUERY_ID"()',
    "SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))",
    "SELECT COUNT(*) FROM TABLE(RESULT_SCAN(LAST_QUERY_ID(-2)))",
    "WITH r AS (SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))) SELECT * FROM r",
    "SELECT * FROM customers WHERE id IN (SELECT $1 FROM TABLE(RESULT_SCAN(LAST_QUERY_ID())))",
    "EXPLAIN SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))",
    "SELECT * FROM TABLE(GET_QUERY_OPERATOR_STATS(LAST_QUERY_ID()))",
    "SELECT * FROM TABLE(INFORMATION_SCHEMA.QUERY_HISTORY_BY_SESSION())",
    "SELECT * FROM TABLE(VALIDATE(customers, JOB_ID => '_last'))",
    "SHOW TABLES ->> SELECT * FROM $1",
    "SHOW VARIABLES",
    "SELECT $tier_guess",
    "SELECT GETVARIABLE('TIER_GUESS')",
    "SELECT * FROM IDENTIFIER($t)",
    "SELECT * FROM IDENTIFIER('$t')",
    "SELECT COUNT(*) FROM customers WHERE tier = $tier_guess",
]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SnowflakeStack]:
    """A server of this module's own: its connection config (the connector's session key) is not shared with
    other tests, so a session these attacks poison on an unfixed build poisons only them."""
    with start_stack(tmp_path_factory.mktemp("fakesnow-sessions")) as running:
        yield running


def _server(stack: SnowflakeStack, tmp_path: Path, transport: str, **guardrail: Any) -> Any:
    path = stack.ade_yaml(tmp_path / f"ade-{transport}", transport=transport)
    if guardrail:
        doc = yaml.safe_load(path.read_text())
        doc["snowflake"]["guardrail"].update(guardrail)
        path.write_text(yaml.safe_dump(doc))
    ctx = BridgeContext.from_settings(load_settings(path, env={}))
    ctx._live = NullLiveRunner()  # the audit trail of these tools is tested in test_snowflake_tools.py
    return build_with(SnowflakeRuntime(ctx))


def _canaries_in(payload: Any) -> list[str]:
    text = json.dumps(payload).lower()
    return [c for c in CANARIES if c.lower() in text]


def _assert_session_refusal(ok: bool, payload: Any, sql: str) -> None:
    assert not ok, f"{sql!r} was answered: {json.dumps(payload)[:400]}"
    assert payload["error"] == "SESSION_STATE_REFUSED" and payload["code"] == "E1013", (sql, payload)
    assert not _canaries_in(payload), (sql, payload)


def _pivot_query_id(stack: SnowflakeStack, sql: str) -> str:
    """A withheld result another session left on the server (another caller's, or an earlier CLI call's)."""
    conn = connect(stack.port)
    try:
        cursor = conn.cursor()
        cursor.execute(sql)
        names = [d.name for d in cursor.description]
        assert any("platinum-qz7k1" in n for n in names), names  # the fake names columns after values
        return str(cursor.sfqid)
    finally:
        conn.close()


def test_a_dynamic_pivot_is_answered_without_value_named_columns(
    stack: SnowflakeStack, tmp_path: Path
) -> None:
    server = _server(stack, tmp_path, "connector")
    answers = call_tools(server, [("execute_sql", {"query": sql}) for sql in PIVOTS])
    for sql, (ok, body) in zip(PIVOTS, answers, strict=True):
        assert ok and body["classification"] == "DATA" and body["names_withheld"], (sql, body)
        assert all(c["name"].startswith("column_") for c in body["columns"]), (sql, body)
        assert not _canaries_in(body), (sql, body)


def test_describe_result_after_a_withheld_pivot_is_refused(stack: SnowflakeStack, tmp_path: Path) -> None:
    """The reported leak: the PIVOT's answer withholds the names, DESCRIBE RESULT LAST_QUERY_ID() gave them."""
    server = _server(stack, tmp_path, "connector")
    (pivot_ok, pivot), (ok, described) = call_tools(
        server,
        [
            ("execute_sql", {"query": PIVOTS[0]}),
            ("execute_sql", {"query": "DESCRIBE RESULT LAST_QUERY_ID()"}),
        ],
    )
    assert pivot_ok and pivot["names_withheld"] and not _canaries_in(pivot)
    _assert_session_refusal(ok, described, "DESCRIBE RESULT LAST_QUERY_ID()")


@pytest.mark.parametrize("tool", ["execute_sql", "execute_scalar"])
def test_every_reach_into_an_earlier_result_or_session_value_is_refused(
    stack: SnowflakeStack, tmp_path: Path, tool: str
) -> None:
    server = _server(stack, tmp_path, "connector")
    calls: list[tuple[str, dict[str, Any]]] = []
    for sql in REACHES:  # each right after a withheld pivot, so the session's last result is value-named
        calls += [("execute_sql", {"query": PIVOTS[0]}), (tool, {"query": sql})]
    answers = call_tools(server, calls)
    for sql, (ok, body) in zip(REACHES, answers[1::2], strict=True):
        _assert_session_refusal(ok, body, sql)


def test_the_cli_transport_refuses_the_same_statements(stack: SnowflakeStack, tmp_path: Path) -> None:
    """A `snow` process per statement leaves no session behind, but query ids outlive sessions and the answer
    must not depend on the transport: the same refusal, before any process starts."""
    stack.require_cli()
    server = _server(stack, tmp_path, "cli")
    answers = call_tools(server, [("execute_sql", {"query": sql}) for sql in REACHES])
    for sql, (ok, body) in zip(REACHES, answers, strict=True):
        _assert_session_refusal(ok, body, sql)


@pytest.mark.parametrize("transport", ["connector", "cli"])
def test_a_known_query_id_reaches_no_result_on_either_transport(
    stack: SnowflakeStack, tmp_path: Path, transport: str
) -> None:
    """A result id, however learnt, opens nothing: results outlive sessions (a user's for 24 hours), so the
    CLI transport's process per statement is no defence against a chosen id."""
    if transport == "cli":
        stack.require_cli()
    query_id = _pivot_query_id(stack, PIVOTS[0])
    statements = [
        f"DESCRIBE RESULT '{query_id}'",
        f"SELECT * FROM TABLE(RESULT_SCAN('{query_id}'))",
        f"SELECT COUNT(*) FROM TABLE(RESULT_SCAN('{query_id}'))",
    ]
    server = _server(stack, tmp_path, transport)
    answers = call_tools(
        server, [(tool, {"query": s}) for s in statements for tool in ("execute_sql", "execute_scalar")]
    )
    for (ok, body), sql in zip(answers, [s for s in statements for _ in (0, 1)], strict=True):
        _assert_session_refusal(ok, body, sql)


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TABLE leak AS SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))",
        "CREATE OR REPLACE VIEW leak_v AS SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID(-2)))",
        "CREATE VIEW leak_q AS SELECT LAST_QUERY_ID() AS q",
        "CREATE FUNCTION leak_f() RETURNS VARCHAR AS $$ SELECT LAST_QUERY_ID() $$",
    ],
)
def test_ddl_cannot_keep_an_earlier_result(stack: SnowflakeStack, tmp_path: Path, ddl: str) -> None:
    """Even with DDL-with-queries allowed, execute_ddl cannot materialize a withheld result into a table."""
    server = _server(stack, tmp_path, "connector", allow_ddl_with_queries=True)
    (pivot_ok, _), (ok, body), (_, listing) = call_tools(
        server,
        [
            ("execute_sql", {"query": PIVOTS[0]}),
            ("execute_ddl", {"ddl": ddl}),
            ("execute_sql", {"query": "SHOW TABLES LIKE 'LEAK%'"}),
        ],
    )
    assert pivot_ok
    _assert_session_refusal(ok, body, ddl)
    assert listing["rows"] == [], listing


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TEMPORARY TABLE customers (id NUMBER)",
        "CREATE OR REPLACE TEMP TABLE customers (id NUMBER)",
        "create local temporary table customers (id number)",
        "CREATE GLOBAL TEMPORARY TABLE customers (id NUMBER)",
        "CREATE VOLATILE TABLE customers (id NUMBER)",
        "CREATE TEMPORARY VIEW orders AS SELECT 1 AS id",
        "CREATE OR REPLACE TEMPORARY STAGE ade_tmp_stage",
        "CREATE TEMPORARY FUNCTION tier_of(x NUMBER) RETURNS NUMBER AS 'x'",
        "CREATE TEMP FILE FORMAT ade_tmp_csv TYPE = CSV",
        "CREATE TEMPORARY SEQUENCE ade_tmp_seq",
        # The defaults every later session starts with: SEARCH_PATH decides where `customers` resolves.
        "ALTER USER fake SET SEARCH_PATH = 'ADE_SNOW.PROD_HR, $current'",
        "ALTER ACCOUNT SET SEARCH_PATH = 'ADE_SNOW.PROD_HR'",
        "alter user if exists fake unset search_path",
    ],
)
def test_ddl_cannot_change_what_the_next_caller_resolves(
    stack: SnowflakeStack, tmp_path: Path, ddl: str
) -> None:
    """A temporary object shadows the permanent one of its name for every later caller of the session (on
    main, `CREATE TEMPORARY TABLE customers (id NUMBER)` left `SELECT * FROM customers` empty, one column)."""
    server = _server(stack, tmp_path, "connector")
    (ok, body), (read_ok, read) = call_tools(
        server,
        [("execute_ddl", {"ddl": ddl}), ("execute_sql", {"query": "SELECT * FROM customers"})],
    )
    _assert_session_refusal(ok, body, ddl)
    assert read_ok and {c["name"] for c in read["columns"]} >= {"ID", "EMAIL", "TIER"}, read
