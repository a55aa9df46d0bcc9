"""The Dagster-free BI core: which tables a tile reads, running tiles (concurrency, timeout, classification),
the sensor's transition rule, agent-safe errors, and the bi: configuration section."""

from __future__ import annotations

import threading
import time

import pytest

from ade_platform.clients.bi.base import backoff_seconds, safe_error
from ade_platform.config import ConfigError, load_settings
from ade_platform.lib.bi.inventory import turned_to_error
from ade_platform.lib.bi.shapes import ElementInfo
from ade_platform.lib.bi.tables import Naming, count_rows_sql, table_from_name, tables_in_sql
from ade_platform.lib.bi.tiles import TileError, dashboard_status, run_tiles

DUCK = Naming("duckdb", "demo", "main")


def relations(sql: str, naming: Naming = DUCK) -> list[str]:
    return [t["relation"] for t in tables_in_sql(sql, naming)]


def test_tables_in_sql_completes_names_and_skips_ctes() -> None:
    assert relations("select * from orders o join main.customers c using (customer_id)") == [
        "demo.main.customers",
        "demo.main.orders",
    ]
    sql = "with recent as (select * from raw.orders) select * from recent join other.main.payments p on true"
    assert relations(sql) == ["demo.raw.orders", "other.main.payments"]
    assert relations("select count(*) from (select 1) as t") == []
    assert relations("this is not sql ((") == []


def test_tables_follow_the_warehouse_case_rules() -> None:
    snow = Naming("snowflake", "ANALYTICS", None)
    assert relations('select * from marts.orders join "Mixed"."Case"', snow) == [
        "ANALYTICS.MARTS.ORDERS",
        "ANALYTICS.Mixed.Case",
    ]
    bq = Naming("bigquery", "my-project", None)
    assert relations("select * from `my-project.sales.orders`", bq) == ["my-project.sales.orders"]
    ref = table_from_name("analytics.fct_revenue", DUCK, "explore_sql_table_name")
    assert ref == {
        "relation": "demo.analytics.fct_revenue",
        "database": "demo",
        "schema": "analytics",
        "name": "fct_revenue",
        "how": "explore_sql_table_name",
    }
    assert count_rows_sql(ref, DUCK) == 'SELECT COUNT(*) AS row_count FROM "demo"."analytics"."fct_revenue"'


def element(i: int, runnable: bool = True, static_error: str | None = None) -> ElementInfo:
    return ElementInfo(
        id=str(i), title=f"tile {i}", type="vis", look_id=None, question_id=str(i), query_id=None,
        database_id=None, model=None, explore=None, sql=None, dimensions=[], measures=[], columns=[], tables=[],
        runnable=runnable, static_error=static_error,
    )  # fmt: skip


def test_run_tiles_bounds_concurrency_times_out_and_classifies() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def run(e: ElementInfo) -> int:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        try:
            if e["id"] == "3":
                raise TileError('Binder Error: column "x" not found')
            if e["id"] == "4":
                time.sleep(3)
            time.sleep(0.05)
            return {"1": 10, "2": 0}.get(e["id"], 5)
        finally:
            with lock:
                running -= 1

    tiles = [element(i) for i in range(1, 9)] + [element(9, runnable=False), element(10, static_error="bad")]
    seen: list[tuple[int, int]] = []
    outcomes = run_tiles(tiles, run, concurrency=2, timeout=0.5, progress=lambda d, t: seen.append((d, t)))
    by_id = {o["element_id"]: o for o in outcomes}
    assert peak <= 2 and "9" not in by_id and len(outcomes) == 9
    assert by_id["1"]["status"] == "ok" and by_id["1"]["row_count"] == 10
    assert by_id["2"]["status"] == "empty" and by_id["2"]["row_count"] == 0
    assert by_id["3"]["status"] == "error" and by_id["3"]["row_count"] is None
    assert by_id["4"]["status"] == "error" and "did not finish within 0.5 s" in by_id["4"]["error"]
    assert by_id["10"]["error"] == "bad"
    assert seen[-1] == (9, 9) and dashboard_status(outcomes) == "error"
    assert dashboard_status([o for o in outcomes if o["status"] != "error"]) == "ok"


def test_turned_to_error_alerts_once_per_transition() -> None:
    assert turned_to_error({}, {"looker:1": "error", "looker:2": "ok"}) == ["looker:1"]
    assert turned_to_error({"looker:1": "error"}, {"looker:1": "error"}) == []
    assert turned_to_error({"looker:1": "ok"}, {"looker:1": "error", "metabase:3": "unknown"}) == ["looker:1"]


def test_safe_error_keeps_identifiers_drops_values_and_paths() -> None:
    text = "Conversion Error: Could not convert string 'jane@example.com' to INT32 in \"email\" at /srv/db/x.duckdb\nmore"
    assert (
        safe_error(text) == "Conversion Error: Could not convert string '…' to INT32 in \"email\" at <path>"
    )
    assert (
        backoff_seconds(0, "2") == 2.0
        and backoff_seconds(10, None) == 8.0
        and backoff_seconds(1, "soon") == 0.5
    )


def test_bi_config_off_without_url_and_clear_when_incomplete(tmp_path) -> None:
    config = tmp_path / "ade.yaml"
    config.write_text(
        "bi:\n  looker:\n    base_url: ${LOOKER_URL:-}\n    client_id: ${LOOKER_ID:-}\n    client_secret: x\n"
        "  metabase:\n    base_url: http://mb.local\n    username: me\n"
    )
    with pytest.raises(ConfigError, match=r"bi\.metabase.*api_key, or username and password"):
        load_settings(config, env={})
    config.write_text(config.read_text().replace("    username: me\n", "    api_key: ${MB_KEY}\n"))
    settings = load_settings(config, env={"MB_KEY": "mb-key-123"})
    assert settings.bi.tools == ["metabase"] and "mb-key-123" not in repr(settings.bi)
    with pytest.raises(ConfigError, match=r"bi\.looker\.client_id.*must not be empty"):
        load_settings(config, env={"MB_KEY": "mb-key-123", "LOOKER_URL": "https://acme.looker.com"})
