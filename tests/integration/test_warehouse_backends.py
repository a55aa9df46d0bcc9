"""The same warehouse tools and Dagster assets on Snowflake (a fakesnow server) and BigQuery (the REST fake)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from ade_platform.config import BigQueryWarehouse, Settings, load_settings
from ade_platform.defs import warehouse
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.resources import StoreResource
from ade_platform.store import StoreReader, StoreWriter
from tests.conftest import settings_for
from tests.fakes.bigquery import FakeBigQuery
from tests.helpers import call_tools
from tests.mcp.shape_check import assert_declared
from tests.mcp.test_warehouse_tools import server_for
from tests.processes import fakesnow_warehouse

pytestmark = pytest.mark.integration
MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"


def publish_manifest(settings: Settings, schema: str, columns: dict[str, str]) -> None:
    """A dbt manifest with one model `orders` in `schema` declaring `columns` (name -> data_type)."""
    manifest = {
        "metadata": {"dbt_schema_version": MANIFEST_SCHEMA, "project_name": "shop"},
        "nodes": {
            "model.shop.orders": {
                "resource_type": "model", "name": "orders", "package_name": "shop", "schema": schema,
                "alias": "orders", "config": {"materialized": "table"}, "depends_on": {"nodes": []},
                "columns": {name: {"name": name, "data_type": dtype} for name, dtype in columns.items()},
            }
        },
        "sources": {},
    }  # fmt: skip
    StoreWriter(settings.store_root).publish(
        "dbt_manifest", files={"data.json": json.dumps(manifest).encode()}
    )


def snapshot_with_dagster(settings: Settings, name: str) -> dg.Definitions:
    defs = dg.Definitions.merge(
        warehouse.defs(settings, DomainInputs()),
        dg.Definitions(resources={"store": StoreResource.from_settings(settings)}),
    )
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        instance=dg.DagsterInstance.ephemeral(), asset_selection=[dg.AssetKey(f"warehouse_schema_{name}")]
    )
    assert result.success
    return defs


DECLARED = {
    "order_id": "int",
    "customer_id": "integer",
    "status": "text",
    "amount": "number(38,0)",
    "updated_at": "timestamp",
}


def common_calls(table: str, schema: str, warehouse: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("warehouse_get_schema", {"schema_name": schema, "table_name": "orders", "warehouse": warehouse}),
        ("warehouse_detect_schema_drift", {"model_name": "orders", "warehouse": warehouse}),
        (
            "warehouse_check_freshness",
            {"table_name": table, "timestamp_column": "updated_at", "warehouse": warehouse},
        ),
        (
            "warehouse_execute",
            {"sql": f"select * from {table} order by order_id", "limit": 2, "warehouse": warehouse},
        ),
        ("warehouse_execute", {"sql": f"delete from {table}", "warehouse": warehouse}),
        (
            "warehouse_detect_duplicates",
            {"table_name": table, "key_columns": ["order_id"], "warehouse": warehouse},
        ),
        (
            "warehouse_get_query_history",
            {"table_pattern": "orders", "lookback_days": 3, "warehouse": warehouse},
        ),
        ("warehouse_explain_query", {"sql": f"select order_id from {table}", "warehouse": warehouse}),
    ]


def declared(server: Any, calls: list[tuple[str, dict[str, Any]]], results: list[tuple[bool, Any]]) -> None:
    """Every key of every answer is declared by its tool's published output schema."""
    answers = [(name, body) for (name, _), (ok, body) in zip(calls, results, strict=True) if ok]
    assert_declared(server, answers, free=(".sample_duplicates[].",))  # one field per key column


# The types each warehouse reports for the `orders` table the tests create.
ORDERS_TYPES = {
    "snowflake": {
        "order_id": "NUMBER(38,0)",
        "customer_id": "NUMBER(38,0)",
        "order_status": "TEXT",
        "amount": "FLOAT",
        "updated_at": "TIMESTAMP_NTZ",
    },
    "bigquery": {
        "order_id": "INT64",
        "customer_id": "INT64",
        "order_status": "STRING",
        "amount": "FLOAT64",
        "updated_at": "TIMESTAMP",
    },
}


def answer_common(
    settings: Settings, table: str, schema: str, warehouse: str
) -> tuple[Any, list[tuple[bool, Any]]]:
    """The common calls through a gateway on `settings`: every answer declared by its tool's output schema and
    checked by check_common. (The server, the answers check_common leaves to the caller.)"""
    server, _ = server_for(settings)
    calls = common_calls(table, schema, warehouse)
    results = call_tools(server, calls)
    declared(server, calls, results)
    return server, check_common(results, ORDERS_TYPES[warehouse])


def check_common(results: list[tuple[bool, Any]], type_of: dict[str, str]) -> list[tuple[bool, Any]]:
    (
        (ok, schema),
        (ok2, drift),
        (ok3, fresh),
        (ok4, rows),
        (ok5, refused),
        (ok6, dup),
        (ok7, history),
        explain,
    ) = results
    assert ok and {c["column_name"].lower(): c["data_type"] for c in schema["columns"]} == type_of
    assert ok2, drift
    # int = NUMBER(38,0) / INT64, text = TEXT / STRING: aliases are not drift; the rename and retype are
    assert [c["column_name"].lower() for c in drift["removed_from_warehouse"]] == ["status"]
    assert [c["column_name"].lower() for c in drift["added_in_warehouse"]] == ["order_status"]
    assert [c["column_name"].lower() for c in drift["type_changed"]] == ["amount"]
    assert [{k: v.lower() for k, v in r.items()} for r in drift["likely_renames"]] == [
        {"from": "status", "to": "order_status"}
    ]
    assert drift["unchanged_count"] == 3 and drift["provenance"]["source"] == "live"  # one table: read live
    assert ok3 and fresh["is_fresh"] is True and 1.9 < fresh["staleness_hours"] < 2.1
    assert ok4 and rows["row_count"] == 2 and rows["limit_applied"] and rows["truncated"]
    assert not ok5 and refused["error"] == "dml_not_permitted"
    assert (
        ok6
        and dup["duplicate_key_count"] == 1
        and dup["duplicate_row_count"] == 2
        and dup["severity"] == "high"
    )
    assert ok7 and history["total_returned"] >= 1
    assert all("x@example.com" not in q["query_text_truncated"] for q in history["queries"])
    return [explain]


def test_snowflake_through_fakesnow(fakesnow_server: dict[str, Any], tmp_path: Path) -> None:
    seed = (
        "create database if not exists BACK_SF",
        "create schema if not exists BACK_SF.SALES",
        "create or replace table BACK_SF.SALES.ORDERS (ORDER_ID int, CUSTOMER_ID int, ORDER_STATUS text, AMOUNT float, UPDATED_AT timestamp_ntz)",
        "insert into BACK_SF.SALES.ORDERS values (1, 10, 'placed', 5.5, dateadd('hour', -2, current_timestamp())),"
        " (1, 11, 'shipped', 6, dateadd('hour', -3, current_timestamp())), (2, 12, 'placed', 7, null)",
        "create database if not exists SNOWFLAKE",
        "create schema if not exists SNOWFLAKE.ACCOUNT_USAGE",
        "create table if not exists SNOWFLAKE.ACCOUNT_USAGE.QUERY_HISTORY (QUERY_ID text, QUERY_TEXT text, USER_NAME text,"
        " START_TIME timestamp_ltz, END_TIME timestamp_ltz, TOTAL_ELAPSED_TIME number, BYTES_SCANNED number,"
        " ROWS_PRODUCED number, EXECUTION_STATUS text)",
        "insert into SNOWFLAKE.ACCOUNT_USAGE.QUERY_HISTORY values ('q-sf-1', 'select * from sales.orders where email = ''x@example.com''',"
        " 'BI_USER', dateadd('hour', -5, current_timestamp()), dateadd('hour', -5, current_timestamp()), 1200, 4096, 3, 'SUCCESS')",
    )
    wh = fakesnow_warehouse(fakesnow_server, "BACK_SF", seed, password="s3cret-pw", schemas=["SALES"])
    settings = settings_for(tmp_path / "ade").model_copy(update={"warehouses": {"sf": wh}})

    defs = snapshot_with_dagster(settings, "sf")
    resource = defs.resources["warehouse_sf"]
    assert type(resource).__name__ == "SnowflakeResource" and "s3cret" not in repr(resource)
    assert StoreReader(settings.store_root).latest("warehouse_schema_sf").data["table_count"] == 1
    publish_manifest(settings, "sales", DECLARED)

    _, ((ok, explain),) = answer_common(settings, "sales.orders", "SALES", "snowflake")
    # fakesnow implements no EXPLAIN: the tool still answers with a structured error, never a traceback
    assert ok or explain["error"] == "query_failed"


def test_bigquery_through_the_rest_fake(tmp_path: Path) -> None:
    with FakeBigQuery(project="proj-x") as fake:
        fake.sql(
            "create schema shop; create table shop.orders (order_id bigint, customer_id bigint, order_status varchar,"
            " amount double, updated_at timestamptz);"
            "insert into shop.orders values (1, 10, 'placed', 5.5, now() - interval 2 hour),"
            " (1, 11, 'shipped', 6, now() - interval 3 hour), (2, 12, 'placed', 7, null)"
        )
        fake.add_job("select * from shop.orders where email = 'x@example.com'", hours_ago=5)
        wh = BigQueryWarehouse(type="bigquery", project="proj-x", datasets=["shop"], api_endpoint=fake.url)
        settings = settings_for(tmp_path / "ade").model_copy(update={"warehouses": {"bq": wh}})
        snapshot_with_dagster(settings, "bq")
        publish_manifest(
            settings, "shop", {**DECLARED, "order_id": "int64", "amount": "numeric", "status": "string"}
        )

        server, ((ok, explain),) = answer_common(settings, "shop.orders", "shop", "bigquery")
        assert ok and explain["estimated_bytes_scanned"] == 3 * 5 * 8 and explain["warehouse"] == "bq"
        ok, body = call_tools(
            server,
            [("warehouse_execute", {"sql": "select count(*) as n from shop.orders", "warehouse": "bq"})],
        )[0]
        assert (
            ok
            and body["rows"] == [{"n": 3}]
            and body["bytes_processed"] == 120
            and body["warehouse_type"] == "bigquery"
        )
        assert ("POST", "/bigquery/v2/projects/proj-x/jobs") in fake.requests  # the dry run


def test_snowflake_password_from_the_environment_reaches_dagster_as_its_variable(
    fakesnow_server: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`password: ${VAR}`: the resource names VAR (an EnvVar) and dagster-snowflake's connection is the one used."""
    fakesnow_warehouse(
        fakesnow_server,
        "ENV_SF",
        (
            "create database if not exists ENV_SF",
            "create schema if not exists ENV_SF.SALES",
            "create or replace table ENV_SF.SALES.ITEMS (ITEM_ID int)",
        ),
    )
    monkeypatch.setenv("ADE_TEST_SF_PASSWORD", "from-the-environment")
    config = tmp_path / "ade.yaml"
    config.write_text(
        "warehouses:\n  sf:\n    type: snowflake\n    account: acct\n    user: u\n"
        "    password: ${ADE_TEST_SF_PASSWORD}\n    database: ENV_SF\n    schemas: [SALES]\n"
        f"    host: {fakesnow_server['host']}\n    port: {fakesnow_server['port']}\n"
        f"    protocol: {fakesnow_server['protocol']}\n"
    )
    settings = load_settings(config, env={**os.environ, "ADE_HOME": str(tmp_path / "ade")})
    defs = snapshot_with_dagster(settings, "sf")
    assert defs.resources["warehouse_sf"].password == dg.EnvVar("ADE_TEST_SF_PASSWORD")
    assert StoreReader(settings.store_root).latest("warehouse_schema_sf").data["table_count"] == 1
