"""Dagster's writes never fail because the gateway is serving: a writer in another process (taking the
platform's write lock, as the dbt and dataset assets do, and no retry of its own) commits every transaction
while the gateway reads the same DuckDB file without pause."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from ade_platform.config import DuckDBWarehouse, Settings
from ade_platform.live import LiveRunner
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.helpers import call_tool

pytestmark = pytest.mark.integration
WRITES = 40
WRITER = """
import sys, time
from pathlib import Path
import duckdb
from ade_platform.lib.warehouse.file_lock import writing
db = Path(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[2])):
    with writing(db), duckdb.connect(str(db)) as con:  # no retry: a lock conflict fails the writer
        con.execute("insert into raw.events values (?)", [i])
    time.sleep(0.05)  # between transactions, as a dbt model or a dataset load gives way
"""
COUNT = "select count(*) as n from raw.events"


def test_a_writer_in_another_process_succeeds_while_the_gateway_serves(
    tmp_settings: Settings, tmp_path: Path
) -> None:
    db = tmp_path / "served.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("create schema raw; create table raw.events (id int)")
    warehouse = DuckDBWarehouse(type="duckdb", path=db)
    settings = tmp_settings.model_copy(update={"warehouses": {"served": warehouse}})
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(tmp_path / "dagster")
    server = build_server(settings, only="warehouse", ctx=ctx)
    ok, body = call_tool(server, "warehouse_execute", {"sql": COUNT})
    assert ok and body["rows"] == [{"n": 0}], body
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(WRITES)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
    assert writer.stdin is not None
    writer.stdin.write("go\n")
    writer.stdin.flush()
    # The read path of warehouse_execute (its client, pooled hosts and all), as fast as it goes.
    from ade_platform.clients.warehouses import warehouse_client

    client = warehouse_client("served", warehouse, 60)
    seen = []
    while writer.poll() is None:
        seen.append(client.query(COUNT, max_rows=1).rows[0]["n"])
    _, errors = writer.communicate(timeout=60)
    assert writer.returncode == 0, errors[-2000:]
    assert len(seen) > WRITES  # the gateway really was reading throughout
    assert seen == sorted(seen) and 0 < seen[-1] <= WRITES  # reads see the writes as they commit
    ok, body = call_tool(server, "warehouse_execute", {"sql": COUNT})
    assert ok and body["rows"] == [{"n": WRITES}], body
