"""`bi_run_look` masks on the SQL Looker runs (issue 34): the Looker emulator (its demo LookML: a field that reads
another view's field, a derived table renaming personal columns to `"Email Address"`, `e_mail`, `"FULL NAME "`
through a CTE, subqueries into customers) over a warehouse written by the test. Every Look's personal values
and, with customers excluded, every value derived from the excluded table must not come back."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ade_platform.config import Settings, SnowflakeExclusionSettings, SnowflakeSettings
from ade_platform.emulators.demo import free_port
from ade_platform.emulators.looker import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET
from ade_platform.emulators.looker import content as looker_content
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import call_tools
from tests.processes import stop, wait_for_http

pytestmark = pytest.mark.integration

CUSTOMERS = [
    (1, "Ada Lovelace", "ada@example.com", 250),
    (2, "Grace Hopper", "grace@example.org", 90),
    (3, "Edsger Dijkstra", "edsger@example.net", 40),
]
SECRET_VALUES = [v for c in CUSTOMERS for v in c[1:3]]
# Looks of the emulator's demo content and the columns each must mask (any reason).
LOOKS = {
    4: {"customers.full_name", "customers.contact"},  # names: the old rule caught these
    5: {"orders.buyer", "orders.buyer_label"},  # another view's fields
    6: {"customer_directory.address_book", "customer_directory.alternate", "customer_directory.display"},
    7: {"orders.buyer_lookup"},  # a subquery into customers
}


def _warehouse(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as con:
        con.execute(
            "create table main.customers (customer_id integer, customer_since date, first_order_date date, "
            "full_name varchar, email varchar, lifetime_value integer, number_of_orders integer)"
        )
        for cid, name, email, value in CUSTOMERS:
            con.execute(
                "insert into main.customers values (?, date '2024-01-01', date '2024-01-02', ?, ?, ?, 1)",
                [cid, name, email, value],
            )
        con.execute(
            "create table main.orders (order_id integer, customer_id integer, order_date date, status varchar, "
            "amount integer, total_paid integer)"
        )
        con.execute("insert into main.orders values (10, 1, date '2024-02-01', 'placed', 5, 5)")
        con.execute("insert into main.orders values (11, 2, date '2024-02-02', 'shipped', 7, 7)")


@pytest.fixture(scope="module")
def looker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    home = tmp_path_factory.mktemp("leaks-bi") / "ade"
    warehouse = home / "warehouse" / "demo.duckdb"
    _warehouse(warehouse)
    port = free_port()
    log = (home.parent / "looker.log").open("ab")
    args = ["--host", "127.0.0.1", "--port", str(port), "--warehouse", str(warehouse)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ade_platform.emulators.looker", *args], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_for_http(f"http://127.0.0.1:{port}/api/versions", proc)
        yield settings_for(
            home,
            ADE_LOOKER_URL=f"http://127.0.0.1:{port}",
            ADE_LOOKER_CLIENT_ID=DEMO_CLIENT_ID,
            ADE_LOOKER_CLIENT_SECRET=DEMO_CLIENT_SECRET,
        )
    finally:
        stop(proc)
        log.close()


def _run(settings: Settings, looks: list[int]) -> list[tuple[bool, Any]]:
    return call_tools(build_server(settings, only="bi-api"), [("bi_run_look", {"look_id": i}) for i in looks])


def test_personal_data_through_views_derived_tables_and_subqueries_is_masked(looker: Settings) -> None:
    answers = _run(looker, list(LOOKS))
    for (look_id, expected), (ok, body) in zip(LOOKS.items(), answers, strict=True):
        assert ok and body["row_count"] > 0, (look_id, body)
        masked = {m["column"] for m in body["masked_columns"]}
        assert expected <= masked, (look_id, body["masked_columns"])
        leaked = [v for v in SECRET_VALUES if v in json.dumps(body["rows"])]
        assert not leaked, (look_id, leaked)
    # what is not personal still answers: ids and values, through the same views
    rows5 = answers[1][1]["rows"]
    assert [r["orders.order_id"] for r in rows5] == [10, 11]
    assert [r["customers.lifetime_value"] for r in rows5] == [250, 90]
    assert {m["column"] for m in answers[1][1]["masked_columns"]} == LOOKS[5]
    assert [r["customer_directory.value"] for r in answers[2][1]["rows"]] == [250, 90, 40]


def test_everything_derived_from_an_excluded_table_is_masked(looker: Settings) -> None:
    excluded = SnowflakeSettings(exclusions=SnowflakeExclusionSettings(patterns=["*.MAIN.CUSTOMERS"]))
    settings = looker.model_copy(update={"snowflake": excluded})
    (ok5, joined), (ok7, subquery), (ok2, plain) = _run(settings, [5, 7, 1])
    assert ok5 and ok7 and ok2, (joined, subquery, plain)
    for body in (joined, subquery):
        assert all(v == "<masked>" for row in body["rows"] for v in row.values()), body
        assert any(m["reason"].startswith("excluded_table") for m in body["masked_columns"])
    # best_customer_value: a scalar subquery into the excluded table, under a harmless name
    reasons = {m["column"]: m["reason"] for m in subquery["masked_columns"]}
    assert reasons["orders.best_customer_value"] == "excluded_table:main.customers"
    assert "250" not in json.dumps(subquery["rows"])
    assert plain["masked_columns"] == [] and plain["rows"], plain  # orders alone are not excluded


def test_the_demo_content_is_data_not_code() -> None:
    """The Looks above are rows of the emulator's content tables (the demo serves them too)."""
    assert {5, 6, 7} <= set(looker_content.LOOKS)
    assert "customer_directory" in looker_content.EXPLORES and looker_content.JOINS["orders"]


def _tag_in_dbt(settings: Settings, column: str | None) -> None:
    """Publish a dbt manifest (as the dbt_manifest asset stores it) whose `customers` model tags `column` pii;
    the whole model when `column` is None. `lifetime_value` matches no PII name pattern: only the tag says so."""
    from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS
    from ade_platform.store import StoreWriter

    columns = {
        name: {"name": name, "tags": ["pii"] if name == column else []}
        for name in ("customer_id", "full_name", "lifetime_value")
    }
    model = {
        "resource_type": "model",
        "name": "customers",
        "alias": "customers",
        "schema": "main",
        "database": "demo",
        "config": {"materialized": "table"},
        "tags": ["pii"] if column is None else [],
        "columns": columns,
    }
    manifest = {
        "metadata": {"dbt_version": "1.10.0"},
        "nodes": {"model.shop.customers": model},
        "sources": {},
    }
    StoreWriter(settings.store_root).publish(ARTIFACT_ASSETS["manifest"], manifest)


def test_a_column_dbt_tags_pii_is_masked_where_no_name_pattern_would(
    looker: Settings, tmp_path: Path
) -> None:
    settings = looker.model_copy(update={"home": tmp_path})  # a store of its own: the other tests see no tag
    assert str(settings.store_root) != str(looker.store_root)
    ((ok5, before),) = _run(settings, [5])
    assert ok5 and [r["customers.lifetime_value"] for r in before["rows"]] == [250, 90]  # untagged: shown

    _tag_in_dbt(settings, "lifetime_value")  # tagged after the gateway started: the next call applies it
    (ok5, joined), (ok6, derived), (ok2, plain) = _run(settings, [5, 6, 1])
    assert ok5 and ok6 and ok2, (joined, derived, plain)
    reasons = {m["column"]: m["reason"] for m in joined["masked_columns"]}
    assert reasons["customers.lifetime_value"].startswith("pii_tag:"), reasons
    assert [r["orders.order_id"] for r in joined["rows"]] == [10, 11]  # the rest still answers
    # through a derived table that renames it (customer_directory.value reads lifetime_value)
    assert {m["column"]: m["reason"] for m in derived["masked_columns"]}[
        "customer_directory.value"
    ].startswith("pii_tag:"), derived["masked_columns"]
    for body in (joined, derived):
        assert not {"250", "90", "40"} & set(json.dumps(body["rows"]).replace(",", " ").split()), body["rows"]
    assert plain["masked_columns"] == [], plain  # orders carry no tag

    _tag_in_dbt(settings, None)  # the whole model tagged: every column read from it
    ((ok5, whole),) = _run(settings, [5])
    masked = {m["column"] for m in whole["masked_columns"]}
    assert {"customers.lifetime_value", "orders.buyer"} <= masked and "orders.order_id" not in masked, masked
