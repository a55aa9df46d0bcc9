"""No canary value reaches the agent: the adversarial corpus through execute_sql and execute_scalar, via MCP.

The fakesnow server holds canary strings and numbers (plain columns, VARIANT values and keys that look
like data, an excluded schema, an excluded table). Every statement of snowflake_adversarial.jsonl goes
through both tools; every answer - result or error - is searched for every canary.

Both transports (`snowflake.transport`) are tested:
- connector (one snowflake-connector session per connection name, clients/snowflake/connector.py): the whole
  corpus, seconds;
- cli: the entries marked `cli` through the real `snow` CLI (one process per executed statement, ~1-10 s
  each); ADE_SNOWFLAKE_FULL_CORPUS=1 sends the whole corpus through the CLI instead.
The checks of specific answers (templating off, client commands refused, errors withheld or scrubbed) run
on the `cli` subset through both.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastmcp import Client

from ade_platform.config import load_settings
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.snowflake import build_with
from mcp_bridge.toolsets.snowflake.service import SnowflakeRuntime
from tests.fakes.snowflake_runner import ConnectorRunner, NullLiveRunner
from tests.fakes.snowflake_stack import CANARIES, DATABASE, run_sql

pytestmark = pytest.mark.integration

CORPUS = [
    json.loads(line)
    for line in Path(__file__).with_name("snowflake_adversarial.jsonl").read_text().splitlines()
]
SECRET = "ade-env-secret-5f1c2a9e"  # an environment variable the snow CLI's templating could read
NEEDLES = [c.lower() for c in [*CANARIES, SECRET]]


def _server(stack: Any, tmp_path: Path, *, transport: str, audited: bool = True) -> tuple[Any, BridgeContext]:
    settings = load_settings(stack.ade_yaml(tmp_path / "ade", transport=transport), env={})
    ctx = BridgeContext.from_settings(settings)
    if not audited:
        ctx._live = NullLiveRunner()  # hundreds of calls: the audit trail is tested on the `cli` subset
    return build_with(SnowflakeRuntime(ctx)), ctx


async def _answers(
    server: Any, cases: list[dict[str, Any]], concurrency: int
) -> list[tuple[str, str, bool, str]]:
    gate = asyncio.Semaphore(concurrency)
    async with Client(server) as client:

        async def one(sql: str, tool: str) -> tuple[str, str, bool, str]:
            async with gate:
                result = await client.call_tool(tool, {"query": sql}, raise_on_error=False)
            text = json.dumps(result.structured_content) if not result.is_error else result.content[0].text
            return sql, tool, result.is_error, text

        jobs = [one(c["sql"], tool) for c in cases for tool in ("execute_sql", "execute_scalar")]
        return await asyncio.gather(*jobs)


def _leaks(answers: list[tuple[str, str, bool, str]]) -> list[str]:
    """Canaries in an answer that the statement did not itself contain (result column names echo the
    statement's own expressions, literals included: that is the agent's text, not data)."""
    found = []
    for sql, tool, _, text in answers:
        lowered, own = text.lower(), sql.lower()
        found += [
            f"{tool}({sql!r}) leaked {n!r}: {text[:300]}" for n in NEEDLES if n in lowered and n not in own
        ]
    return found


def test_corpus_is_broad() -> None:
    assert len(CORPUS) >= 100 and len({c["sql"] for c in CORPUS}) == len(CORPUS)
    assert sum(1 for c in CORPUS if c.get("cli")) >= 15
    assert all(c["why"] for c in CORPUS)


def test_no_canary_leaks_through_the_full_corpus(snowflake_stack: Any, tmp_path: Path) -> None:
    server, _ = _server(snowflake_stack, tmp_path, transport="connector", audited=False)
    answers = asyncio.run(_answers(server, CORPUS, concurrency=4))
    assert len(answers) == 2 * len(CORPUS)
    assert not _leaks(answers), "\n".join(_leaks(answers))
    # The corpus exercised every path: refusals, redacted DATA answers, values, and failures.
    errors = {json.loads(text)["error"] for _, _, is_error, text in answers if is_error}
    assert {
        "EXCLUDED_OBJECT",
        "WRITE_REFUSED",
        "MULTI_STATEMENT",
        "QUERY_FAILED",
        "SESSION_STATE_REFUSED",
    } <= errors
    kinds = {json.loads(text).get("classification") for _, _, is_error, text in answers if not is_error}
    assert {"METADATA", "SCALAR", "DATA"} <= kinds
    # The statements the guard now allows are answered with counts, not refused or redacted.
    allowed = {c["sql"] for c in CORPUS if c.get("allowed")}
    for sql, tool, is_error, text in answers:
        if sql in allowed and tool == "execute_scalar":
            body = json.loads(text)
            assert not is_error and body["classification"] == "SCALAR" and not body["redacted"], (sql, text)
    # execute_scalar on DATA statements answers with the spec's reclassified (QUERY_CLASSIFIED) response.
    reclassified = [
        json.loads(text) for _, tool, is_error, text in answers if tool == "execute_scalar" and not is_error
    ]
    assert [b for b in reclassified if b.get("reclassified") and b["error"] == "QUERY_CLASSIFIED"]


@pytest.mark.parametrize(
    "transport",
    [
        # ~70 s: each statement is a real `snow` process; `make test-slow` and CI run it
        pytest.param("cli", marks=pytest.mark.slow),
        "connector",
    ],
)
def test_no_canary_leaks_through_each_transport(
    snowflake_stack: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str
) -> None:
    if transport == "cli":
        snowflake_stack.require_cli()
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.setenv("ADE_CANARY_SECRET", SECRET)
    full = os.environ.get("ADE_SNOWFLAKE_FULL_CORPUS") == "1"
    cases = CORPUS if full else [c for c in CORPUS if c.get("cli")]
    server, ctx = _server(snowflake_stack, tmp_path, transport=transport)
    answers = asyncio.run(_answers(server, cases, concurrency=3))
    ctx.live().flush()  # the audit runs of these calls (fast path) are recorded now
    assert not _leaks(answers), "\n".join(_leaks(answers))
    by_sql = {(sql, tool): (is_error, json.loads(text)) for sql, tool, is_error, text in answers}
    # Templating is off: the text comes back as written, not the environment variable.
    is_error, body = by_sql[("SELECT '<% ctx.env.ADE_CANARY_SECRET %>' AS x", "execute_sql")]
    assert not is_error and body["rows"] == [{"X": "<% ctx.env.ADE_CANARY_SECRET %>"}]
    # Client commands never reach the CLI.
    is_error, body = by_sql[("!source /etc/hostname", "execute_sql")]
    assert is_error and body["error"] == "WRITE_REFUSED"
    # A run-time error that quotes a value is withheld; a compilation error is shown (scrubbed).
    is_error, body = by_sql[("SELECT CAST(email AS NUMBER) FROM customers", "execute_sql")]
    assert is_error and body["error"] == "QUERY_FAILED" and "withheld" in body["detail"]
    is_error, body = by_sql[("SELECT nonexistent_column FROM customers", "execute_sql")]
    assert is_error and body["error"] in ("QUERY_FAILED", "OBJECT_NOT_FOUND")
    assert "NONEXISTENT_COLUMN" in body["detail"].upper()
    # The data-keyed VARIANT object is a Record, not an interface listing its keys.
    is_error, body = by_sql[("SELECT payload FROM events", "execute_sql")]
    assert not is_error and "Record<string" in body["variant_interfaces"]["PAYLOAD"]


ARCHIVE_CANARY = "cnry-archive-7305"
SPEC_DEFAULT_OBJECTS = [
    f"CREATE OR REPLACE TABLE {DATABASE}.APP.LEDGER_ARCHIVE (ID NUMBER, NOTE VARCHAR)",
    f"INSERT INTO {DATABASE}.APP.LEDGER_ARCHIVE VALUES (1, '{ARCHIVE_CANARY}')",
    f"CREATE OR REPLACE TABLE {DATABASE}.APP.SYSTEM_AUDIT (ID NUMBER, NOTE VARCHAR)",
    f"INSERT INTO {DATABASE}.APP.SYSTEM_AUDIT VALUES (1, '{ARCHIVE_CANARY}')",
    f"CREATE OR REPLACE TABLE {DATABASE}.APP.LEDGER_PROD (ID NUMBER, NOTE VARCHAR)",
    f"INSERT INTO {DATABASE}.APP.LEDGER_PROD VALUES (1, '{ARCHIVE_CANARY}')",
]


def test_spec_default_exclusions_hold_with_no_configuration(snowflake_stack: Any, tmp_path: Path) -> None:
    """No `exclusions` key at all: the spec's ^PROD_, _PROD$, _BACKUP$, _ARCHIVE$, ^SYSTEM_ still refuse."""
    run_sql(snowflake_stack.port, SPEC_DEFAULT_OBJECTS)
    try:
        path = snowflake_stack.ade_yaml(tmp_path / "ade")
        doc = yaml.safe_load(path.read_text())
        del doc["snowflake"]["exclusions"]
        path.write_text(yaml.safe_dump(doc))
        settings = load_settings(path, env={})
        assert settings.snowflake.exclusions.patterns == []
        ctx = BridgeContext.from_settings(settings)
        ctx._live = NullLiveRunner()
        runtime = SnowflakeRuntime(ctx, runner_factory=lambda name: ConnectorRunner(snowflake_stack.port))
        probes = [
            {"sql": "SELECT note FROM ledger_archive", "why": "_ARCHIVE$"},
            {"sql": "SELECT COUNT(*) FROM system_audit", "why": "^SYSTEM_"},
            {"sql": "SELECT MAX(note) FROM ledger_prod", "why": "_PROD$"},
            {"sql": "SELECT * FROM prod_hr.salaries", "why": "^PROD_ (schema)"},
            {"sql": "SELECT email FROM customers_backup", "why": "_BACKUP$"},
        ]
        answers = asyncio.run(_answers(build_with(runtime), probes, concurrency=2))
        texts = [text for *_, text in answers]
        assert not [t for t in texts if ARCHIVE_CANARY in t], texts
        assert not _leaks(answers), "\n".join(_leaks(answers))
        assert all(
            is_error and json.loads(text)["error"] == "EXCLUDED_OBJECT" for _, _, is_error, text in answers
        )

        # Listings leave them out too.
        async def listing() -> set[str]:
            async with Client(build_with(runtime)) as client:
                result = await client.call_tool(
                    "list_objects", {"objectType": "table", "database": DATABASE, "schema": "APP"}
                )
            return {o["name"] for o in result.structured_content["objects"]}

        names = asyncio.run(listing())
        assert "CUSTOMERS" in names and not names & {"LEDGER_ARCHIVE", "SYSTEM_AUDIT", "LEDGER_PROD"}
    finally:
        run_sql(
            snowflake_stack.port,
            [
                f"DROP TABLE IF EXISTS {DATABASE}.APP.{t}"
                for t in ("LEDGER_ARCHIVE", "SYSTEM_AUDIT", "LEDGER_PROD")
            ],
        )
