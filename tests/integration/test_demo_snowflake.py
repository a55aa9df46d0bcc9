"""Snowflake in the demo (issue 26): the stand-in the launcher starts (ade_platform/emulators/snowflake), the demo's
`snowflake:` section pointed at it, the DDL repository materialized with everything else, and the snowflake tools
answering through MCP: discovery, DDL, metadata-only SQL, staleness and audited DDL. Exclusions hide HR; the
PII-named columns of RAW.CUSTOMERS come back as a shape, never as values."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from ade_platform.config import Settings
from ade_platform.emulators.snowflake import DATABASE
from ade_platform.store import StoreReader
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.fakes.snowflake_stack import snow_cli
from tests.helpers import call_tool, call_tools

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def gateway(demo_settings: Settings) -> Any:
    ctx = BridgeContext.from_settings(demo_settings)
    yield build_server(demo_settings, ctx=ctx), ctx
    ctx.live().flush()


def test_the_demo_configures_snowflake_for_its_stand_in(demo_settings: Settings) -> None:
    section = demo_settings.snowflake
    assert section is not None and section.transport == "connector" and section.connection == "demo"
    assert section.config_file is not None and section.config_file.stat().st_mode & 0o077 == 0
    synced = StoreReader(demo_settings.store_root).latest("snowflake_object_repository").data
    paths = {o["path"] for o in synced["objects"]}
    assert f"src/{DATABASE}/RAW/tables/CUSTOMERS.sql" in paths
    assert f"src/{DATABASE}/ANALYTICS/views/V_ORDER_PAYMENTS.sql" in paths
    assert not [p for p in paths if "/HR/" in p]  # excluded: never synced


def test_the_snowflake_tools_answer_in_the_demo(gateway: Any) -> None:
    server, ctx = gateway
    (
        (ok_list, tables),
        (ok_schemas, schemas),
        (ok_desc, described),
        (ok_ddl, ddl),
        (ok_meta, meta),
        (ok_data, data),
        (ok_hr, hidden),
        (ok_stale, staleness),
    ) = call_tools(
        server,
        [
            ("list_objects", {"objectType": "table", "database": DATABASE, "schema": "RAW"}),
            ("list_objects", {"objectType": "schema", "database": DATABASE}),
            ("describe_object", {"objectType": "table", "objectName": "CUSTOMERS"}),
            ("get_ddl", {"objectType": "view", "objectName": f"{DATABASE}.ANALYTICS.V_ORDER_PAYMENTS"}),
            ("execute_sql", {"query": f"SELECT * FROM {DATABASE}.INFORMATION_SCHEMA.TABLES"}),
            ("execute_sql", {"query": "SELECT * FROM customers"}),
            ("describe_object", {"objectType": "table", "objectName": "HR.EMPLOYEES"}),
            ("check_staleness", {"objectName": f"{DATABASE}.RAW.ORDERS", "objectType": "table"}),
        ],
    )
    assert ok_list and {"CUSTOMERS", "ORDERS", "PAYMENTS"} <= {o["name"] for o in tables["objects"]}, tables
    assert ok_schemas and {"RAW", "ANALYTICS"} <= {o["name"] for o in schemas["objects"]}
    assert "HR" not in {o["name"] for o in schemas["objects"]}
    assert ok_desc and {"FULL_NAME", "EMAIL", "PHONE", "DATE_OF_BIRTH"} <= {
        c["name"] for c in described["metadata"]
    }
    assert ok_ddl and "PAYMENTS" in ddl["ddl"].upper()
    assert ok_meta and meta["classification"] == "METADATA"
    assert "EMPLOYEES" not in {r["TABLE_NAME"] for r in meta["rows"]}
    # Personal columns: the answer is the shape of the result, no value.
    assert ok_data and data["classification"] == "DATA" and data["redacted"] and "rows" not in data
    assert not ok_hr and hidden["error"] == "EXCLUDED_OBJECT"
    assert ok_stale and staleness["isStale"] is False, staleness
    assert "@example" not in json.dumps([tables, described, meta, data])

    probe = f"{DATABASE}.ANALYTICS.DEMO_PROBE_{uuid.uuid4().hex[:8].upper()}"
    ok, created = call_tool(
        server, "execute_ddl", {"ddl": f"CREATE TABLE {probe} (ID NUMBER)", "cause": "test"}
    )
    assert ok and created["success"] and created["provenance"]["source"] == "live", created
    from ade_platform.live import TAG_TOOL

    run = ctx.live().instance().get_run_by_id(created["provenance"]["run_id"])
    assert run is not None and run.tags[TAG_TOOL] == "execute_ddl"  # audited: a Dagster run
    ok, dropped = call_tool(server, "execute_ddl", {"ddl": f"DROP TABLE {probe}", "cause": "test"})
    assert ok and dropped["success"], dropped


@pytest.mark.slow  # a `snow` process per statement
def test_the_snow_cli_transport_reaches_the_stand_in_too(demo_settings: Settings) -> None:
    cli = snow_cli()
    if cli is None:
        pytest.skip("the snow CLI is not installed (`make setup` puts it in .tools/bin)")
    section = demo_settings.snowflake
    assert section is not None
    settings = demo_settings.model_copy(
        update={"snowflake": section.model_copy(update={"transport": "cli", "cli_path": cli})}
    )
    ok, tables = call_tool(
        build_server(settings, only="snowflake"),
        "list_objects",
        {"objectType": "table", "database": DATABASE, "schema": "ANALYTICS"},
    )
    assert ok and "CUSTOMER_ORDERS" in {o["name"] for o in tables["objects"]}, tables
