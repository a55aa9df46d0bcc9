"""All ten snowflake tools through MCP, with the real `snow` CLI against a fakesnow server.

fakesnow has neither GET_DDL nor SNOWFLAKE.ACCOUNT_USAGE.OBJECT_DEPENDENCIES, so these tests also cover
the fallbacks (DDL from INFORMATION_SCHEMA, lineage from parsed view definitions) and that answers say so.
One server (one gateway) per module: each executed statement costs a CLI start-up, so calls are few and
independent ones run concurrently.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from ade_platform.config import Settings, load_settings
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.fakes.snowflake_stack import DATABASE
from tests.helpers import call_tool
from tests.mcp.paging_support import all_pages, items

pytestmark = pytest.mark.integration
TOOLS = {
    "execute_sql",
    "execute_scalar",
    "list_objects",
    "describe_object",
    "get_ddl",
    "get_lineage",
    "get_dependencies",
    "sync_objects",
    "check_staleness",
    "execute_ddl",
}


@pytest.fixture(scope="module")
def env(snowflake_stack: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    snowflake_stack.require_cli()
    mp = pytest.MonkeyPatch()
    mp.delenv("DAGSTER_HOME", raising=False)
    home = tmp_path_factory.mktemp("sf-tools") / "ade"
    settings = load_settings(snowflake_stack.ade_yaml(home), env={})
    ctx = BridgeContext.from_settings(settings)
    yield settings, build_server(settings, ctx=ctx), ctx
    ctx.live().flush()
    mp.undo()


def _payload(result: Any) -> tuple[bool, Any]:
    if result.is_error:
        return False, json.loads(result.content[0].text)
    return True, result.structured_content


def calls(
    server: Any, batch: list[tuple[str, dict[str, Any]]], concurrency: int = 3
) -> list[tuple[bool, Any]]:
    async def go() -> list[tuple[bool, Any]]:
        gate = asyncio.Semaphore(concurrency)
        async with Client(server) as client:

            async def one(name: str, args: dict[str, Any]) -> tuple[bool, Any]:
                async with gate:
                    return _payload(await client.call_tool(name, args, raise_on_error=False))

            return await asyncio.gather(*(one(n, a) for n, a in batch))

    return asyncio.run(go())


def test_surface(env: tuple[Settings, Any, BridgeContext]) -> None:
    async def go() -> list[Any]:
        async with Client(env[1]) as client:
            return await client.list_tools()

    tools = {t.name: t for t in asyncio.run(go())}
    assert set(tools) >= TOOLS
    assert tools["execute_ddl"].annotations.destructive_hint is True
    assert tools["execute_sql"].annotations.read_only_hint is True
    schema = tools["list_objects"].input_schema
    assert "objectType" in schema["properties"] and "materialized_view" in json.dumps(schema)
    assert "cortex" not in json.dumps(schema).lower()


@pytest.mark.slow  # a snow CLI process per statement: over a minute together (CI runs test-slow)
def test_discovery_and_lineage(env: tuple[Settings, Any, BridgeContext]) -> None:
    _, server, _ = env
    results = calls(
        server,
        [
            ("list_objects", {"objectType": "table", "database": DATABASE, "schema": "APP"}),
            ("list_objects", {"objectType": "schema", "database": DATABASE}),
            ("describe_object", {"objectType": "table", "objectName": "CUSTOMERS"}),
            ("describe_object", {"objectType": "table", "objectName": "PROD_HR.SALARIES"}),
            ("get_ddl", {"objectType": "table", "objectName": f"{DATABASE}.APP.CUSTOMERS"}),
            ("get_lineage", {"objectName": "V_ORDER_TOTALS", "objectType": "view"}),
        ],
    )
    (ok_t, tables), (ok_s, schemas), (ok_d, described), (ok_x, excluded), (ok_ddl, ddl), (ok_l, lineage) = (
        results
    )
    assert ok_t and {"CUSTOMERS", "ORDERS", "EVENTS"} <= {o["name"] for o in tables["objects"]}
    assert "CUSTOMERS_BACKUP" not in {o["name"] for o in tables["objects"]}  # excluded by *_BACKUP
    assert ok_s and "APP" in {o["name"] for o in schemas["objects"]}
    assert "PROD_HR" not in {o["name"] for o in schemas["objects"]}
    assert ok_d and {c["name"]: c["type"] for c in described["metadata"]}["PROFILE"] == "VARIANT"
    assert not ok_x and excluded["error"] == "EXCLUDED_OBJECT" and excluded["code"] == "E1001"
    assert ok_ddl and ddl["source"] == "information_schema" and "INFORMATION_SCHEMA" in ddl["note"]
    assert "create or replace TABLE ADE_SNOW.APP.CUSTOMERS" in ddl["ddl"] and "PROFILE VARIANT" in ddl["ddl"]
    assert ok_l and lineage["source"] == "view_definitions" and "sqlglot" in lineage["note"]
    nodes = {n["name"]: n for n in lineage["nodes"]}
    assert (
        nodes[f"{DATABASE}.APP.CUSTOMERS"]["distance"] == 2
        and nodes[f"{DATABASE}.APP.ORDERS"]["distance"] == 1
    )
    # Second round: the fallbacks are now known, so each of these costs one CLI call.
    (ok_v, view_ddl), (ok_dep, deps), (ok_up, salary), (ok_m, mviews) = calls(
        server,
        [
            ("get_ddl", {"objectType": "view", "objectName": "V_CUSTOMER_CONTACT"}),
            ("get_dependencies", {"objectName": "V_ORDER_TOTALS", "objectType": "view"}),
            ("get_lineage", {"objectName": "V_SALARY_BAND", "objectType": "view", "direction": "upstream"}),
            ("list_objects", {"objectType": "materialized_view", "database": DATABASE}),
        ],
    )
    assert ok_v and "SELECT" in view_ddl["ddl"].upper() and "CUSTOMERS" in view_ddl["ddl"]
    assert ok_dep and {d["name"] for d in deps["dependencies"]} == {
        f"{DATABASE}.APP.ORDERS",
        f"{DATABASE}.APP.V_CUSTOMER_CONTACT",
    }
    assert ok_up and salary["nodes"] == [] and salary["lineage"] == []  # its only upstream is excluded
    # The spec's shapes: OBJECT_DEPENDENCIES rows under `lineage`, REFERENCE_OBJECT_* on dependencies.
    assert {
        "REFERENCED_DATABASE": DATABASE,
        "REFERENCED_SCHEMA": "APP",
        "REFERENCED_OBJECT_NAME": "ORDERS",
        "REFERENCED_OBJECT_DOMAIN": "TABLE",
        "REFERENCING_DATABASE": DATABASE,
        "REFERENCING_SCHEMA": "APP",
        "REFERENCING_OBJECT_NAME": "V_ORDER_TOTALS",
        "REFERENCING_OBJECT_DOMAIN": "VIEW",
        "DEPENDENCY_TYPE": "BY_NAME",
    } in lineage["lineage"]
    assert len(lineage["lineage"]) == len(lineage["edges"])
    assert {(d["REFERENCE_OBJECT_NAME"], d["REFERENCE_OBJECT_TYPE"]) for d in deps["dependencies"]} == {
        (f"{DATABASE}.APP.ORDERS", "TABLE"),
        (f"{DATABASE}.APP.V_CUSTOMER_CONTACT", "VIEW"),
    }

    # get_ddl's text content is the DDL itself (an agent writing it to a .sql file writes SQL).
    async def raw_ddl() -> Any:
        async with Client(server) as client:
            return await client.call_tool(
                "get_ddl", {"objectType": "view", "objectName": "V_CUSTOMER_CONTACT"}
            )

    answer = asyncio.run(raw_ddl())
    assert answer.content[0].text == answer.structured_content["ddl"] == view_ddl["ddl"]
    assert answer.structured_content["source"] and "provenance" in answer.structured_content
    # fakesnow has no SHOW MATERIALIZED VIEWS: a scrubbed compilation error, with the spec's code.
    assert ok_m or (mviews["error"] == "QUERY_FAILED" and mviews["code"] == "E1010")

    # docs/PAGING.md: the lineage one node a page, each page with its edges and their OBJECT_DEPENDENCIES rows
    args = {"objectName": "V_ORDER_TOTALS", "objectType": "view"}
    pages = all_pages(server, "get_lineage", args, "nodes", limit=1)
    assert len(pages) == len(lineage["nodes"]) >= 2
    assert [n["name"] for n in items(pages, "nodes")] == [n["name"] for n in lineage["nodes"]]
    assert sorted(map(str, items(pages, "edges"))) == sorted(map(str, lineage["edges"]))
    assert sorted(map(str, items(pages, "lineage"))) == sorted(map(str, lineage["lineage"]))
    ok, summary = call_tool(server, "get_lineage", {**args, "detail": "summary"})
    assert ok and summary["nodes"] == [] and summary["summary"]["total_nodes"] == len(lineage["nodes"]), (
        summary
    )
    per_depth = {str(d): sum(1 for n in lineage["nodes"] if n["distance"] == d) for d in (1, 2)}
    assert summary["summary"]["nodes_per_depth"] == {k: v for k, v in per_depth.items() if v}, summary
    listed = items(
        all_pages(
            server,
            "list_objects",
            {"objectType": "table", "database": DATABASE, "schema": "APP"},
            "objects",
            limit=1,
        ),
        "objects",
    )
    assert [o["name"] for o in listed] == [o["name"] for o in tables["objects"]]


@pytest.mark.slow  # a snow CLI process per statement: over a minute together (CI runs test-slow)
def test_query_tools(env: tuple[Settings, Any, BridgeContext]) -> None:
    _, server, _ = env
    (ok_show, show), (ok_info, info), (ok_count, count), (ok_scalar, scalar), (ok_data, data) = calls(
        server,
        [
            ("execute_sql", {"query": "SHOW SCHEMAS"}),
            ("execute_sql", {"query": f"SELECT * FROM {DATABASE}.INFORMATION_SCHEMA.TABLES"}),
            ("execute_sql", {"query": "SELECT COUNT(*) AS N FROM customers"}),
            ("execute_scalar", {"query": "SELECT COUNT(email) AS N FROM customers", "limit": 5}),
            ("execute_sql", {"query": "SELECT * FROM customers"}),
        ],
    )
    assert ok_show and show["classification"] == "METADATA"
    assert "PROD_HR" not in {r["name"] for r in show["rows"]} and "APP" in {r["name"] for r in show["rows"]}
    assert ok_info and info["classification"] == "METADATA"
    names = {r["TABLE_NAME"] for r in info["rows"]}
    assert "CUSTOMERS" in names and not names & {"SALARIES", "CUSTOMERS_BACKUP"}
    assert ok_count and count["classification"] == "SCALAR" and count["rows"] == [{"N": 3}]
    assert ok_scalar and scalar["rows"] == [{"N": 2}]
    assert (scalar["_queryType"], scalar["_rowCount"]) == ("scalar", 1) and scalar["row_count"] == 1
    assert (count["_queryType"], show["_queryType"], data["_queryType"]) == ("scalar", "metadata", "data")
    assert data["_rowCount"] == 3
    assert ok_data and data["classification"] == "DATA" and data["redacted"] and data["row_count"] == 3
    columns = {c["name"]: c for c in data["columns"]}
    assert columns["EMAIL"]["null_percentage"] == pytest.approx(33.33) and "rows" not in data
    assert "interface PROFILE" in data["variant_interfaces"]["PROFILE"]
    refused = calls(
        server,
        [
            ("execute_sql", {"query": "DROP TABLE customers"}),
            ("execute_sql", {"query": "SELECT 1; SELECT 2"}),
            ("execute_sql", {"query": "SELECT * FROM customers_backup"}),
        ],
    )
    # Read-only calls are audited too (fast path: the Dagster run is recorded in the background),
    # refusals as failed runs; SQL literals never reach the run tags.
    from dagster import RunsFilter

    from ade_platform.live import TAG_ARGUMENTS, TAG_PATH, TAG_TOOL

    ctx = env[2]
    ctx.live().flush()
    runs = ctx.live().instance().get_runs(RunsFilter(tags={TAG_TOOL: "execute_sql"}))
    assert len(runs) >= 4 and all(r.tags[TAG_PATH] == "fast" for r in runs)
    assert any("DROP TABLE" in r.tags[TAG_ARGUMENTS] for r in runs)
    assert [(ok, body["error"], body["code"]) for ok, body in refused] == [
        (False, "WRITE_REFUSED", "E1007"),
        (False, "MULTI_STATEMENT", "E1008"),
        (False, "EXCLUDED_OBJECT", "E1001"),
    ]
    # The spec's error format (6.2): `message` next to the design's `detail`.
    assert all(body["message"] == body["detail"] and body["message"] for _, body in refused)
    # execute_scalar on a statement that reads values: the spec's QUERY_CLASSIFIED redacted response.
    [(ok_re, reclassified)] = calls(server, [("execute_scalar", {"query": "SELECT email FROM customers"})])
    assert ok_re and reclassified["reclassified"] is True and reclassified["redacted"] is True
    assert (reclassified["error"], reclassified["code"], reclassified["_queryType"]) == (
        "QUERY_CLASSIFIED",
        "E1002",
        "data",
    )
    assert [c["name"] for c in reclassified["columns"]] == ["EMAIL"] and "rows" not in reclassified
    assert "qz7k1" not in json.dumps(reclassified)


@pytest.mark.slow  # a snow CLI process per statement: over a minute together (CI runs test-slow)
def test_sync_staleness_and_ddl(env: tuple[Settings, Any, BridgeContext]) -> None:
    settings, server, ctx = env
    probe = f"{DATABASE}.APP.DDL_PROBE"
    [(ok, created)] = calls(
        server, [("execute_ddl", {"ddl": f"CREATE TABLE {probe} (ID NUMBER)", "cause": "test"})]
    )
    assert ok and created["success"] and created["provenance"]["source"] == "live"
    [(ok, synced)] = calls(server, [("sync_objects", {"cause": "test"})])
    assert ok and synced["counts"]["table"] >= 4 and synced["counts"]["view"] == 3
    root = settings.home / "snowflake" / "repository"
    index = json.loads((root / ".object-repository.json").read_text())
    paths = {o["path"] for o in index["objects"]}
    assert f"src/{DATABASE}/APP/tables/DDL_PROBE.sql" in paths and f"src/{DATABASE}/_database.sql" in paths
    assert f"src/{DATABASE}/APP/_schema.sql" in paths
    assert not [p for p in paths if "PROD_HR" in p or "BACKUP" in p]
    assert not list(root.rglob("*SALARIES*"))
    assert {"from": f"{DATABASE}.PROD_HR.SALARIES", "to": f"{DATABASE}.APP.V_SALARY_BAND"} in index[
        "dependencies"
    ]
    results = calls(
        server,
        [
            ("check_staleness", {"objectName": "DDL_PROBE", "objectType": "table"}),
            # The synced repository reached the store: exclusions now extend through views.
            ("execute_sql", {"query": "SELECT * FROM v_salary_band"}),
            ("execute_ddl", {"ddl": f"DROP TABLE {DATABASE}.PROD_HR.SALARIES"}),
            ("execute_ddl", {"ddl": "INSERT INTO orders VALUES (1, 1, 1, 'x')"}),
            ("execute_ddl", {"ddl": "CREATE VIEW v2 AS SELECT * FROM customers"}),
            ("sync_objects", {"targetDir": "/etc"}),
        ],
    )
    (ok_fresh, fresh), (_, view), (_, drop), (_, insert), (_, ctas), (_, outside) = results
    assert ok_fresh and fresh["isStale"] is False and fresh["localPath"].endswith("DDL_PROBE.sql")
    assert view["error"] == "EXCLUDED_OBJECT" and "excluded_dependency" in json.dumps(view["reasons"])
    assert (
        drop["error"] == "EXCLUDED_OBJECT"
        and insert["error"] == "NOT_DDL"
        and ctas["error"] == "WRITE_REFUSED"
    )
    assert outside["error"] == "path_not_allowed"
    [(ok, altered)] = calls(
        server, [("execute_ddl", {"ddl": f"ALTER TABLE {probe} ADD COLUMN NOTE VARCHAR"})]
    )
    assert ok and altered["statement"] == "ALTER"
    [(ok, stale)] = calls(server, [("check_staleness", {"objectName": probe, "objectType": "table"})])
    assert ok and stale["isStale"] is True and stale["localHash"] != stale["remoteHash"]
    # Every live call is a Dagster run with the tool, redacted arguments and the cause as tags.
    from ade_platform.live import TAG_ARGUMENTS, TAG_TOOL

    run = ctx.live().instance().get_run_by_id(created["provenance"]["run_id"])
    assert run is not None and run.tags[TAG_TOOL] == "execute_ddl" and "DDL_PROBE" in run.tags[TAG_ARGUMENTS]


def test_cli_failures_map_to_spec_codes(snowflake_stack: Any, tmp_path: Path) -> None:
    snowflake_stack.require_cli()
    broken = load_settings(snowflake_stack.ade_yaml(tmp_path / "a", cli_path="/nonexistent/snow"), env={})
    unknown = load_settings(snowflake_stack.ade_yaml(tmp_path / "b"), env={"SNOW_CONNECTION": "no_such_conn"})
    [(ok1, missing)] = calls(build_server(broken), [("list_objects", {"objectType": "database"})])
    [(ok2, auth)] = calls(build_server(unknown), [("list_objects", {"objectType": "database"})])
    assert not ok1 and missing["error"] == "CLI_NOT_FOUND" and missing["code"] == "E1006"
    assert not ok2 and auth["error"] == "AUTH_FAILED" and auth["code"] == "E1003"
    assert "/nonexistent" not in json.dumps(missing)
