"""The three warehouse clients against real engines: DuckDB files, a fakesnow server, the BigQuery fake."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest
import snowflake.connector

from ade_platform.clients.warehouses import WarehouseError, open_client
from ade_platform.config import BigQueryWarehouse, DuckDBWarehouse, SnowflakeWarehouse
from tests.fakes.bigquery import FakeBigQuery

pytestmark = pytest.mark.integration
HOLD_LOCK = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('locked', flush=True); time.sleep(float(sys.argv[2])); c.close()"


@pytest.fixture
def duck(tmp_path: Path) -> Path:
    path = tmp_path / "wh.duckdb"
    con = duckdb.connect(str(path))
    con.execute("create schema raw; create table raw.events (id int, email varchar, ts timestamp)")
    con.execute(
        "insert into raw.events values (1, 'a@example.com', '2024-01-01'), (1, 'b@example.com', '2024-01-02')"
    )
    con.close()
    return path


def _hold(path: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_duckdb_reads_wait_out_a_writer_then_give_up_with_a_structured_error(duck: Path) -> None:
    wh = DuckDBWarehouse(type="duckdb", path=duck)
    writer = _hold(duck, 1.0)
    try:
        started = time.monotonic()
        result = open_client("demo", wh, 10).query("select count(*) as n from raw.events")
        assert result.rows == [{"n": 2}] and time.monotonic() - started > 0.2  # it waited for the lock
    finally:
        writer.wait(timeout=30)
    writer = _hold(duck, 30)
    try:
        client = open_client("demo", wh, 10, lock_retry=0.3)
        with pytest.raises(WarehouseError) as err:
            client.query("select 1")
        assert err.value.code == "connection_failed" and "locked" in err.value.detail
    finally:
        writer.kill()
        writer.wait(timeout=30)


def test_duckdb_timeout_no_file_access_and_missing_file(duck: Path, tmp_path: Path) -> None:
    client = open_client("demo", DuckDBWarehouse(type="duckdb", path=duck), 0.3)
    with pytest.raises(WarehouseError) as err:
        client.query("select sum(hash(i)) from range(100000000000) t(i)")
    assert err.value.code == "query_timeout"
    with pytest.raises(WarehouseError) as err:
        client.query(f"select * from read_csv('{duck}')")
    assert err.value.code == "query_failed" and str(tmp_path) not in err.value.detail
    missing = open_client("x", DuckDBWarehouse(type="duckdb", path=tmp_path / "none.duckdb"), 1)
    with pytest.raises(WarehouseError) as err:
        missing.snapshot()
    assert err.value.code == "connection_failed"
    table = client.resolve_table(["EVENTS"])
    assert table.parts == ("wh", "raw", "events") and [c["name"] for c in table.columns] == [
        "id",
        "email",
        "ts",
    ]


@pytest.fixture
def snowflake_wh(fakesnow_server: dict[str, Any]) -> SnowflakeWarehouse:
    con = snowflake.connector.connect(account="acct", user="u", password="p", **fakesnow_server)
    cur = con.cursor()
    for statement in (
        "create database if not exists CLIENTS_DB",
        "create schema if not exists CLIENTS_DB.APP",
        "create or replace table CLIENTS_DB.APP.USERS (ID int, NAME text, SCORE number(10,2), SEEN_AT timestamp_ntz)",
        "insert into CLIENTS_DB.APP.USERS values (1, 'a', 1.5, '2024-01-01 00:00:00'), (2, 'b', 2, null)",
    ):
        cur.execute(statement)
    con.close()
    return SnowflakeWarehouse(
        type="snowflake", account="acct", user="u", password="p", database="CLIENTS_DB", **fakesnow_server
    )


def test_snowflake_client_snapshot_query_and_errors(snowflake_wh: SnowflakeWarehouse) -> None:
    client = open_client("sf", snowflake_wh, 10)
    try:
        data = client.snapshot()
        users = next(t for t in data["tables"] if t["name"] == "USERS")
        assert [(c["name"], c["type"]) for c in users["columns"]] == [
            ("ID", "NUMBER(38,0)"), ("NAME", "TEXT"), ("SCORE", "NUMBER(10,2)"), ("SEEN_AT", "TIMESTAMP_NTZ")
        ]  # fmt: skip
        assert client.query("select * from app.users order by id", max_rows=1).rows == [
            {"ID": 1, "NAME": "a", "SCORE": 1.5, "SEEN_AT": "2024-01-01T00:00:00"}
        ]
        assert client.resolve_table(["app", "users"]).parts == ("CLIENTS_DB", "APP", "USERS")
        with pytest.raises(WarehouseError) as err:
            client.resolve_table(["app", "nope"])
        assert err.value.code == "table_not_found"
        with pytest.raises(WarehouseError) as err:
            client.query("select missing_column from app.users")
        assert err.value.code == "query_failed" and "Snowflake error" in err.value.detail
    finally:
        client.close()


def test_snowflake_unreachable_is_connection_failed(fakesnow_server: dict[str, Any]) -> None:
    wh = SnowflakeWarehouse(
        type="snowflake",
        account="a",
        user="u",
        password="s3cr3t-pw",
        host="127.0.0.1",
        port=9,
        protocol="http",
    )
    with pytest.raises(WarehouseError) as err:
        open_client("sf", wh, 5).query("select 1")
    assert err.value.code == "connection_failed" and "s3cr3t" not in str(err.value)


def test_bigquery_client_against_the_rest_fake() -> None:
    with FakeBigQuery(project="proj-1") as fake:
        fake.sql(
            "create schema shop; create table shop.orders (id bigint, email varchar, placed_at timestamptz, d date);"
            "insert into shop.orders values (1, 'a@x.io', '2024-01-01 10:00:00+00', '2024-01-01'), (1, null, null, null)"
        )
        fake.add_job("select email from shop.orders where id = 7", hours_ago=30)
        wh = BigQueryWarehouse(type="bigquery", project="proj-1", api_endpoint=fake.url)
        client = open_client("bq", wh, 10)
        data = client.snapshot()
        assert [(c["name"], c["type"]) for c in data["tables"][0]["columns"]] == [
            ("id", "INT64"), ("email", "STRING"), ("placed_at", "TIMESTAMP"), ("d", "DATE")
        ]  # fmt: skip
        result = client.query("select * from shop.orders order by email nulls last", max_rows=5)
        assert result.rows[0] == {
            "id": 1,
            "email": "a@x.io",
            "placed_at": "2024-01-01T10:00:00+00:00",
            "d": "2024-01-01",
        }
        assert result.bytes_processed == 2 * 4 * 8 and result.query_id
        plan = client.explain("select id from shop.orders")
        assert plan["estimated_bytes_scanned"] == 64 and '"statementType": "SELECT"' in plan["plan_text"]
        history = client.query_history("%orders%", 2, 10)
        texts = [h["query_text_truncated"] for h in history]
        assert "select email from shop.orders where id = ?" in texts  # literals stripped, the rest as written
        assert client.resolve_table(["shop", "orders"]).parts == ("proj-1", "shop", "orders")
        with pytest.raises(WarehouseError) as err:
            client.query("select nope from shop.orders")
        assert err.value.code == "query_failed" and "127.0.0.1" not in err.value.detail
        called = {
            path.rsplit("/", 1)[-1] if "tables/" not in path else "tables.get" for _, path in fake.requests
        }
        assert {"queries", "jobs", "datasets", "tables.get"} <= called
        client.close()


def test_duckdb_file_behind_a_symlink_is_readable_and_nothing_else_is(duck: Path, tmp_path: Path) -> None:
    """A deployment may point the configured path at a shared volume: DuckDB checks the resolved path."""
    linked = tmp_path / "mounted" / "wh.duckdb"
    linked.parent.mkdir()
    linked.symlink_to(duck)
    client = open_client("demo", DuckDBWarehouse(type="duckdb", path=linked), 10)
    assert client.query("select count(*) as n from raw.events").rows == [{"n": 2}]
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()
    with pytest.raises(WarehouseError):
        client.query(f"attach '{other}' as other")
