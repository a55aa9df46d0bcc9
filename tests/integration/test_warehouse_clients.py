"""The three warehouse clients against real engines: DuckDB files, a fakesnow server, the BigQuery fake."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ade_platform.clients.warehouses import WarehouseError, warehouse_client
from ade_platform.config import BigQueryWarehouse, DuckDBWarehouse, SnowflakeWarehouse
from tests.fakes.bigquery import FakeBigQuery
from tests.processes import fakesnow_warehouse

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
    # A writer outside the platform (no write lock) opens the file right after a read: with a held attach
    # it would meet DuckDB's lock (see the test below), so this client attaches per query.
    wh = DuckDBWarehouse(type="duckdb", path=duck, hold_seconds=0)
    writer = _hold(duck, 1.0)
    try:
        started = time.monotonic()
        result = warehouse_client("demo", wh, 10).query("select count(*) as n from raw.events")
        assert result.rows == [{"n": 2}] and time.monotonic() - started > 0.2  # it waited for the lock
    finally:
        writer.wait(timeout=30)
    writer = _hold(duck, 30)
    try:
        client = warehouse_client("demo", wh, 10, lock_retry=0.3)
        with pytest.raises(WarehouseError) as err:
            client.query("select 1")
        assert err.value.code == "connection_failed" and "locked" in err.value.detail
    finally:
        writer.kill()
        writer.wait(timeout=30)


WRITE_WITH_LOCK = """
import sys, time, duckdb
from pathlib import Path
from ade_platform.lib.warehouse.file_lock import writing
started = time.monotonic()
with writing(Path(sys.argv[1])), duckdb.connect(sys.argv[1]) as con:
    waited = time.monotonic() - started
    con.execute("insert into raw.events values (3, 'c@example.com', '2024-01-03')")
print(f"{waited:.3f}", flush=True)
"""
RAW_WRITE = "import duckdb, sys; duckdb.connect(sys.argv[1]).close(); print('opened')"


def _run(code: str, path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)


def test_duckdb_holds_the_file_between_reads_and_gives_it_to_a_writer(duck: Path) -> None:
    client = warehouse_client("demo", DuckDBWarehouse(type="duckdb", path=duck, hold_seconds=30), 10)
    try:
        assert client.query("select count(*) as n from raw.events").rows == [{"n": 2}]
        # Held: a writer that does not announce itself meets DuckDB's lock (the documented trade-off) ...
        refused = _run(RAW_WRITE, duck)
        assert refused.returncode != 0 and "lock" in refused.stderr.lower()
        # ... while a platform writer announces itself and gets the file at once, not after hold_seconds.
        written = _run(WRITE_WITH_LOCK, duck)
        assert written.returncode == 0, written.stderr[-2000:]
        assert float(written.stdout) < 5
        # The next read attaches the file afresh and sees the write.
        assert client.query("select count(*) as n from raw.events").rows == [{"n": 3}]
    finally:
        client.close()
    short = warehouse_client("demo", DuckDBWarehouse(type="duckdb", path=duck, hold_seconds=0.2), 10)
    try:
        short.query("select 1")
        time.sleep(1)  # past hold_seconds: the idle host let go of the file
        assert _run(RAW_WRITE, duck).stdout.strip() == "opened"
    finally:
        short.close()


def test_duckdb_held_attach_follows_a_replaced_file(duck: Path, tmp_path: Path) -> None:
    client = warehouse_client("demo", DuckDBWarehouse(type="duckdb", path=duck, hold_seconds=30), 10)
    try:
        assert client.query("select count(*) as n from raw.events").rows == [{"n": 2}]
        fresh = tmp_path / "fresh.duckdb"
        with duckdb.connect(str(fresh)) as con:
            con.execute("create schema raw; create table raw.events as select range as id from range(5)")
        fresh.replace(duck)  # a rebuilt file moved into place (a new inode) while the old one is held
        assert client.query("select count(*) as n from raw.events").rows == [{"n": 5}]
    finally:
        client.close()


def test_duckdb_timeout_no_file_access_and_missing_file(duck: Path, tmp_path: Path) -> None:
    client = warehouse_client("demo", DuckDBWarehouse(type="duckdb", path=duck), 0.3)
    with pytest.raises(WarehouseError) as err:
        client.query("select sum(hash(i)) from range(100000000000) t(i)")
    assert err.value.code == "query_timeout"
    with pytest.raises(WarehouseError) as err:
        client.query(f"select * from read_csv('{duck}')")
    assert err.value.code == "query_failed" and str(tmp_path) not in err.value.detail
    missing = warehouse_client("x", DuckDBWarehouse(type="duckdb", path=tmp_path / "none.duckdb"), 1)
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
    seed = (
        "create database if not exists CLIENTS_DB",
        "create schema if not exists CLIENTS_DB.APP",
        "create or replace table CLIENTS_DB.APP.USERS (ID int, NAME text, SCORE number(10,2), SEEN_AT timestamp_ntz)",
        "insert into CLIENTS_DB.APP.USERS values (1, 'a', 1.5, '2024-01-01 00:00:00'), (2, 'b', 2, null)",
    )
    return fakesnow_warehouse(fakesnow_server, "CLIENTS_DB", seed, password="p")


def test_snowflake_client_snapshot_query_and_errors(snowflake_wh: SnowflakeWarehouse) -> None:
    client = warehouse_client("sf", snowflake_wh, 10)
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
        warehouse_client("sf", wh, 5).query("select 1")
    assert err.value.code == "connection_failed" and "s3cr3t" not in str(err.value)


def test_bigquery_client_against_the_rest_fake() -> None:
    with FakeBigQuery(project="proj-1") as fake:
        fake.sql(
            "create schema shop; create table shop.orders (id bigint, email varchar, placed_at timestamptz, d date);"
            "insert into shop.orders values (1, 'a@x.io', '2024-01-01 10:00:00+00', '2024-01-01'), (1, null, null, null)"
        )
        fake.add_job("select email from shop.orders where id = 7", hours_ago=30)
        wh = BigQueryWarehouse(type="bigquery", project="proj-1", api_endpoint=fake.url)
        client = warehouse_client("bq", wh, 10)
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
    client = warehouse_client("demo", DuckDBWarehouse(type="duckdb", path=linked), 10)
    assert client.query("select count(*) as n from raw.events").rows == [{"n": 2}]
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()
    with pytest.raises(WarehouseError):
        client.query(f"attach '{other}' as other")


def test_ade_write_lock_runs_a_shell_writer_while_a_reader_holds_the_file(duck: Path, tmp_path: Path) -> None:
    config = tmp_path / "ade.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\nwarehouses:\n  wh:\n    type: duckdb\n    path: {duck}\n"
        "  other:\n    type: bigquery\n    project: p\n"
    )
    client = warehouse_client("wh", DuckDBWarehouse(type="duckdb", path=duck, hold_seconds=30), 10)
    ade = [sys.executable, "-m", "ade_platform.cli", "--config", str(config)]
    insert = (
        "import duckdb, sys; duckdb.connect(sys.argv[1]).execute('insert into raw.events (id) values (9)')"
    )
    try:
        assert client.query("select count(*) as n from raw.events").rows == [{"n": 2}]  # now held
        done = subprocess.run(
            [*ade, "write-lock", "wh", "--", sys.executable, "-c", insert, str(duck)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        assert "holding wh.duckdb for writing" in done.stderr
        assert client.query("select count(*) as n from raw.events").rows == [{"n": 3}]
        failing = subprocess.run(
            [*ade, "write-lock", "wh", "--", sys.executable, "-c", "raise SystemExit(3)"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert failing.returncode == 3  # the command's own status
        for argv in (["write-lock", "other", "--", "true"], ["write-lock", "wh"]):
            refused = subprocess.run([*ade, *argv], capture_output=True, text=True, timeout=60)
            assert refused.returncode == 2 and "ade:" in refused.stderr and "Traceback" not in refused.stderr
    finally:
        client.close()
