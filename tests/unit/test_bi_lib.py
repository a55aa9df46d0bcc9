"""The Dagster-free BI core: which tables a tile reads, running tiles (concurrency, timeout, classification),
the sensor's transition rule, agent-safe errors, and the bi: configuration section."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from ade_platform.clients.bi.base import safe_error
from ade_platform.clients.http import retry_delay
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
        retry_delay(0, httpx.Response(429, headers={"Retry-After": "2"})) == 2.0
        and retry_delay(10, None) == 8.0
        and retry_delay(1, httpx.Response(503, headers={"Retry-After": "soon"})) == 0.5
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


# --- bi_run_look's rows (issue 23 §6): masked columns, the row cap, the shape ---------------------------------
ORDERS = "demo.main.orders"


def look_field(name: str, sql: str | None = None, relation: str | None = ORDERS, type_: str = "string"):
    from ade_platform.lib.bi.look_rows import LookField

    return LookField(name=name, type=type_, sql=sql, relation=relation)


def rules_for(tmp_path, text: str = ""):
    from ade_platform.clients.bi import look_rules

    config = tmp_path / "ade.yaml"
    config.write_text(text or "{}\n")
    return look_rules(load_settings(config, env={}))


def test_personal_columns_are_found_by_name_by_column_and_by_field_reference(tmp_path) -> None:
    from ade_platform.lib.bi.look_rows import protected_columns

    fields = [
        look_field("orders.status", "${TABLE}.status"),
        look_field("orders.full_name", "${TABLE}.full_name"),  # its own name
        look_field("orders.contact", '${TABLE}."email_address"'),  # the column it reads
        look_field("orders.reach", "LOWER(${customers.phone})"),  # another field it reads
        look_field("orders.count", "COUNT(*)", type_="count"),
    ]
    protected = protected_columns(fields, rules_for(tmp_path))
    assert protected == {
        "orders.full_name": "pii:name",
        "orders.contact": "pii:email",
        "orders.reach": "pii:phone",
    }
    # The pii settings take part: an ignored name is not masked, a configured pattern is.
    text = "pii:\n  ignore: ['^full_name$']\n  patterns: [{name: order_state, regex: '^status$', risk_level: low}]\n"
    assert set(protected_columns(fields, rules_for(tmp_path, text))) == {
        "orders.status",
        "orders.contact",
        "orders.reach",
    }


def test_an_excluded_or_unknown_table_masks_every_column(tmp_path) -> None:
    from ade_platform.lib.bi.look_rows import protected_columns

    fields = [look_field("orders.status"), look_field("orders.count", "COUNT(*)", type_="count")]
    excluding = rules_for(tmp_path, "snowflake:\n  exclusions:\n    patterns: ['*.MAIN.ORDERS']\n")
    assert protected_columns(fields, excluding) == {
        "orders.status": f"excluded_table:{ORDERS}",
        "orders.count": f"excluded_table:{ORDERS}",
    }
    # The spec's default exclusions apply without a snowflake section (as `ade guard` does).
    prod = [look_field("orders.status", relation="demo.main.prod_orders")]
    assert protected_columns(prod, rules_for(tmp_path)) == {
        "orders.status": "excluded_table:demo.main.prod_orders"
    }
    # A joined view's or a derived table's field may read an excluded table: masked while exclusions exist.
    joined = [look_field("customers.segment", relation=None)]
    assert protected_columns(joined, rules_for(tmp_path)) == {"customers.segment": "unverified_table"}
    none = rules_for(tmp_path, "snowflake:\n  exclusions:\n    regexes: []\n")
    assert protected_columns(joined, none) == {}


def test_rows_are_masked_capped_and_undeclared_keys_hidden() -> None:
    from ade_platform.lib.bi.look_rows import MASK, LookRules, look_body
    from ade_platform.lib.guard.policy import GuardPolicy

    fields = [look_field("c.id", "${TABLE}.id", type_="number"), look_field("c.email", "${TABLE}.email")]
    rows = [{"c.id": i, "c.email": f"user{i}@example.com", "calc": f"user{i}@example.com"} for i in range(5)]
    rules = LookRules(GuardPolicy())
    body = look_body(rows, fields, [], rules=rules, mode="rows", cap=3, asked=4)
    assert body["row_count"] == 3 and body["truncated"] and body["mode"] == "rows"
    assert [r["c.id"] for r in body["rows"]] == [0, 1, 2]
    assert all(r["c.email"] == MASK and r["calc"] == MASK for r in body["rows"])
    assert body["masked_columns"] == [
        {"column": "c.email", "reason": "pii:email"},
        {"column": "calc", "reason": "undeclared_field"},  # a table calculation: cannot be checked
    ]
    whole = look_body(rows, fields, [], rules=rules, mode="rows", cap=5, asked=6)
    assert whole["row_count"] == 5 and not whole["truncated"]
    # The API's ceiling stopped the extra row: a result of exactly cap rows may have been cut.
    assert look_body(rows, fields, [], rules=rules, mode="rows", cap=5, asked=5)["truncated"]
    # A value pivoted on a masked field is keyed by that field's values: masked too.
    pivoted = [{"c.id": 1, "c.count": {"c.email": {"a@example.com": 1}}}]
    counted = [*fields, look_field("c.count", "COUNT(*)", type_="count")]
    masked = look_body(pivoted, counted, ["c.email"], rules=rules, mode="rows", cap=5, asked=6)
    assert masked["rows"] == [{"c.id": 1, "c.count": MASK}]


def test_shape_mode_keeps_no_value() -> None:
    from ade_platform.lib.bi.look_rows import LookRules, look_body
    from ade_platform.lib.guard.policy import GuardPolicy

    fields = [look_field("c.id", type_="number"), look_field("c.email"), look_field("c.city")]
    rows = [
        {"c.id": 7001, "c.email": "someone@example.com", "c.city": None},
        {"c.id": 7002, "c.email": None, "c.city": "Tromsø"},
    ]
    body = look_body(rows, fields, [], rules=LookRules(GuardPolicy()), mode="shape", cap=10, asked=11)
    assert body["rows"] == [] and body["row_count"] == 2 and body["redacted"] and body["mode"] == "shape"
    assert body["columns"] == [
        {"name": "c.id", "type": "number", "null_percentage": 0.0},
        {"name": "c.email", "type": "string", "null_percentage": None},  # masked: nothing from its values
        {"name": "c.city", "type": "string", "null_percentage": 50.0},
    ]
    text = repr(body)
    assert not any(v in text for v in ("7001", "7002", "someone@example.com", "Tromsø"))


def test_a_field_reading_a_column_dbt_tags_pii_is_masked_without_the_sql() -> None:
    from ade_platform.lib.bi.look_rows import LookRules, protected_columns
    from ade_platform.lib.guard.policy import GuardPolicy

    fields = [
        look_field("customers.customer_id", None, relation="main.customers"),
        look_field("customers.lifetime_value", None, relation="main.customers"),  # reads its own column
        look_field("customers.total_value", "SUM(${TABLE}.lifetime_value)", relation="main.customers"),
        look_field("orders.lifetime_value", None, relation="main.orders"),  # same name, another table
    ]
    column = LookRules(GuardPolicy(), tagged=frozenset({("customers", "lifetime_value")}))
    assert protected_columns(fields, column) == {
        "customers.lifetime_value": "pii_tag:main.customers.lifetime_value",
        "customers.total_value": "pii_tag:main.customers.lifetime_value",
    }
    whole = LookRules(GuardPolicy(), tagged=frozenset({("customers", "*")}))
    assert set(protected_columns(fields, whole)) == {
        "customers.customer_id",
        "customers.lifetime_value",
        "customers.total_value",
    }
    assert protected_columns(fields, LookRules(GuardPolicy())) == {}  # no tag, no PII-looking name
