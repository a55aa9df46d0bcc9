"""execute_ddl judges the code that will run, not only the CREATE around it (issue 34, "Why" 3, "What to build" 2).

Generated variants (tests/security/ddl_variants.py) go through MCP `execute_ddl` against the fakesnow stand-in:
bodies of tasks, alerts, procedures and functions (plain, '...' with '' or backslash escapes, $$...$$; scripting
blocks; nested bodies) that unload to a URL or a stage, run EXECUTE IMMEDIATE on a concatenated text, CALL a
procedure, run or resume a task, or read an excluded schema; non-SQL languages; and the kinds outside the
allow-list (stages with URLs, integrations, users/roles/grants, shares, network policies, unset or dropped
policies, task resumes). Each must be refused with a structured error (its E-code) and nothing may run: the
live runner records no DDL run, and the catalog holds no object an attack named. Controls prove both checks
can fail: allowed DDL does run, and its table does show in the catalog.
"""

from __future__ import annotations

import logging
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from ade_platform.config import load_settings
from ade_platform.lib.snowflake.errors import E_CODES
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.snowflake import build_with
from mcp_bridge.toolsets.snowflake.service import SnowflakeRuntime
from tests.fakes.snowflake_stack import SnowflakeStack, start_stack
from tests.helpers import call_tools
from tests.security.ddl_variants import all_variants

pytestmark = pytest.mark.integration

GUARD_CODES = {
    "DDL_BODY_REFUSED",
    "DDL_KIND_REFUSED",
    "EXCLUDED_OBJECT",
    "MULTI_STATEMENT",
    "SESSION_STATE_REFUSED",
    "WRITE_REFUSED",
    "NOT_DDL",
}


class RecordingLiveRunner:
    """The live runner's place in the tool: records every run it is asked for, then runs it (no Dagster)."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def ddl(self) -> list[str]:
        """The statements execute_ddl sent to the warehouse (execute_sql's reads are live runs too)."""
        return [r["ddl"] for r in self.runs if r["tool"] == "execute_ddl"]

    def run(self, tool: str, fn: Callable[[], Any], **kw: Any) -> Any:
        from ade_platform.live import LiveResult

        self.runs.append({"tool": tool, **kw.get("arguments", {})})
        return LiveResult(run_id="recorded", value=fn(), elapsed_ms=0.0)


@pytest.fixture(scope="module", autouse=True)
def quiet_refusals() -> Iterator[None]:
    """FastMCP logs each refused call with a rendered traceback (a third of a second each): a thousand refusals
    would spend minutes drawing them. Refusals are asserted on the answers, so the log is muted here."""
    loggers = [logging.getLogger(n) for n in list(logging.root.manager.loggerDict) if "fastmcp" in n.lower()]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    yield
    for lg, level in zip(loggers, levels, strict=True):
        lg.setLevel(level)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SnowflakeStack]:
    with start_stack(tmp_path_factory.mktemp("fakesnow-ddl")) as running:
        yield running


def _server(stack: SnowflakeStack, tmp_path: Path, **guardrail: Any) -> tuple[Any, RecordingLiveRunner]:
    path = stack.ade_yaml(tmp_path / "ade", transport="connector")
    if guardrail:
        doc = yaml.safe_load(path.read_text())
        doc["snowflake"]["guardrail"].update(guardrail)
        path.write_text(yaml.safe_dump(doc))
    ctx = BridgeContext.from_settings(load_settings(path, env={}))
    live = RecordingLiveRunner()
    ctx._live = live
    return build_with(SnowflakeRuntime(ctx)), live


def _atk_objects(server: Any) -> list[str]:
    """Every object named ATK_* the catalog shows (tables, views, schemas, stages, sequences)."""
    listings = [
        "SELECT table_schema, table_name FROM information_schema.tables WHERE table_name LIKE 'ATK%'",
        "SHOW TABLES LIKE 'ATK%'",
        "SHOW SCHEMAS LIKE 'ATK%'",
    ]
    found = []
    for sql, (ok, body) in zip(
        listings, call_tools(server, [("execute_sql", {"query": s}) for s in listings]), strict=True
    ):
        assert ok, (sql, body)
        for row in body["rows"]:
            found += [
                str(v) for k, v in row.items() if "name" in k.lower() and str(v).upper().startswith("ATK")
            ]
    return sorted({f.upper() for f in found})


@pytest.mark.parametrize(
    "stride",
    [
        pytest.param(5, id="every-fifth"),  # every class, kind and quoting form, in the default run
        pytest.param(1, id="all", marks=pytest.mark.slow),  # the whole product: over a minute
    ],
)
def test_generated_ddl_attacks_are_refused_and_nothing_runs(
    stack: SnowflakeStack, tmp_path: Path, stride: int
) -> None:
    server, live = _server(stack, tmp_path)
    variants = all_variants()[::stride]
    answers = call_tools(server, [("execute_ddl", {"ddl": sql, "cause": "attack"}) for _, sql, _ in variants])
    per_class: Counter[str] = Counter()
    codes: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for (cls, sql, expected), (ok, body) in zip(variants, answers, strict=True):
        per_class[cls] += 1
        assert not ok, f"{cls}: accepted {sql!r}: {body}"
        assert body["error"] in expected, (cls, sql, body)
        assert body["code"] == E_CODES[body["error"]] and body["message"], (cls, sql, body)
        assert body.get("reasons"), (cls, sql, body)  # the guard says why
        codes[cls][body["error"]] += 1
    for cls, n in per_class.items():
        print(f"{cls}: {n} variants refused {dict(codes[cls])}")
    assert len(variants) * stride >= 900 and min(per_class.values()) * stride >= 15, per_class
    assert live.runs == [], live.runs[:3]  # nothing reached the warehouse (no DDL, no read)
    assert _atk_objects(server) == []
    # The checks can fail: an allowed CREATE is a recorded run, and its table shows in the catalog.
    [(ok, created)] = call_tools(server, [("execute_ddl", {"ddl": "CREATE TABLE atk_control (id NUMBER)"})])
    assert ok and created["success"], created
    assert live.ddl() == ["CREATE TABLE atk_control (id NUMBER)"]
    assert _atk_objects(server) == ["ATK_CONTROL"]
    call_tools(server, [("execute_ddl", {"ddl": "DROP TABLE atk_control"})])


# DDL on the allow-list, including SQL bodies that only do what execute_ddl itself allows: the guard lets it
# reach the warehouse (the stand-in may still fail to run a task or procedure: that is its limit, not a refusal).
ALLOWED = [
    "CREATE SCHEMA IF NOT EXISTS atk_ok_schema",
    "CREATE SEQUENCE atk_ok_seq",
    "CREATE TABLE atk_ok_t (id NUMBER, url VARCHAR, policy VARCHAR)",
    "ALTER TABLE atk_ok_t ADD COLUMN note VARCHAR",
    "COMMENT ON TABLE atk_ok_t IS 'scratch table of the DDL suite'",
    "CREATE FILE FORMAT atk_ok_ff TYPE = CSV",
    "CREATE STAGE atk_ok_stage",
    "CREATE TAG atk_ok_tag",
    "CREATE OR REPLACE FUNCTION atk_ok_fn(x NUMBER) RETURNS NUMBER LANGUAGE SQL AS 'x * 2'",
    "CREATE OR REPLACE PROCEDURE atk_ok_proc(n NUMBER) RETURNS VARCHAR LANGUAGE SQL AS $$\n"
    "DECLARE total NUMBER DEFAULT 0;\nBEGIN\n  FOR i IN 1 TO :n DO\n    total := total + i;\n  END FOR;\n"
    "  IF (total > 10) THEN\n    INSERT INTO atk_ok_t (id) VALUES (:total);\n  END IF;\n  RETURN 'ok';\nEND;\n$$",
    "CREATE TASK atk_ok_task WAREHOUSE = COMPUTE_WH SCHEDULE = '60 MINUTE' AS INSERT INTO atk_ok_t (id) VALUES (1)",
    "ALTER TASK atk_ok_task SUSPEND",
    "DROP TABLE atk_ok_t",
    "DROP SCHEMA IF EXISTS atk_ok_schema",
]


def test_allowed_ddl_reaches_the_warehouse(stack: SnowflakeStack, tmp_path: Path) -> None:
    server, live = _server(stack, tmp_path)
    answers = call_tools(server, [("execute_ddl", {"ddl": sql}) for sql in ALLOWED])
    for sql, (ok, body) in zip(ALLOWED, answers, strict=True):
        assert ok or body["error"] not in GUARD_CODES, (sql, body)
    assert live.ddl() == ALLOWED


def test_task_execution_is_the_operators_switch(stack: SnowflakeStack, tmp_path: Path) -> None:
    """RESUME/EXECUTE run a body this check may never have seen: refused by default, allowed by config."""
    statements = ["ALTER TASK atk_task RESUME", "EXECUTE TASK atk_task", "ALTER ALERT atk_alert RESUME"]
    server, live = _server(stack, tmp_path)
    for (ok, body), sql in zip(
        call_tools(server, [("execute_ddl", {"ddl": s}) for s in statements]), statements, strict=True
    ):
        assert not ok and body["error"] == "DDL_KIND_REFUSED" and body["code"] == "E1014", (sql, body)
    assert live.runs == []
    allowed, live_on = _server(stack, tmp_path / "on", allow_task_execution=True)
    for (ok, body), sql in zip(
        call_tools(allowed, [("execute_ddl", {"ddl": s}) for s in statements]), statements, strict=True
    ):
        assert ok or body["error"] not in GUARD_CODES, (sql, body)
    assert live_on.ddl() == statements
