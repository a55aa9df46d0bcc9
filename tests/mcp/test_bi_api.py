"""The bi-api toolset through the MCP protocol, on the materialized demo, against the Looker and Metabase
emulators (looker-sdk for real against the Looker one). Their dashboards run real SQL on the demo warehouse;
each tool has one planted broken tile (a column the model lacks) and one empty tile (a filter matching nothing).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from ade_platform.config import MetabaseSettings, Settings
from ade_platform.emulators.looker import DEMO_CLIENT_SECRET
from ade_platform.emulators.metabase import DEMO_API_KEY, DEMO_PASSWORD, DEMO_USERNAME
from ade_platform.live import TAG_ARGUMENTS, TAG_TOOL, LiveRunner
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import call_tool, call_tools, read_only_open_world_tools

pytestmark = pytest.mark.integration
TOOLS = {
    "bi_list_dashboards", "bi_get_dashboard_elements", "bi_check_dashboard_health", "bi_run_look",
    "bi_verify_row_counts",
}  # fmt: skip
SECRETS = (DEMO_CLIENT_SECRET, DEMO_API_KEY, DEMO_PASSWORD)
# tool -> (dashboard with the planted faults, broken tile, the missing column, empty tile, a healthy dashboard)
PLANTED = {
    "looker": ("1", "103", "fulfillment_status", "104", "2"),
    "metabase": ("1", "12", "discount_code", "13", "2"),
}

# What the `bi` fixture hands each test: the demo's settings, the bi-api server over them, and its context.
BiStack = tuple[Settings, Any, BridgeContext]


def server_for(settings: Settings, dagster_home: Path) -> tuple[Any, BridgeContext]:
    ctx = BridgeContext.from_settings(settings)
    ctx._live = LiveRunner(dagster_home)  # an instance of its own, not the demo's
    return build_server(settings, only="bi-api", ctx=ctx), ctx


def with_metabase_login(settings: Settings, password: str) -> Settings:
    metabase = MetabaseSettings(
        base_url=settings.bi.metabase.base_url, username=DEMO_USERNAME, password=SecretStr(password)
    )
    return settings.model_copy(update={"bi": settings.bi.model_copy(update={"metabase": metabase})})


@pytest.fixture(scope="module")
def bi(demo_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> BiStack:
    assert demo_settings.bi.tools == ["looker", "metabase"], "the demo emulators are not configured"
    server, ctx = server_for(demo_settings, tmp_path_factory.mktemp("bi-dagster"))
    return demo_settings, server, ctx


def test_five_tools_read_only_open_world_with_typed_output(bi: BiStack) -> None:
    tools = read_only_open_world_tools(bi[1], TOOLS, idempotent=True)
    assert tools["bi_run_look"].inputSchema["properties"]["limit"]["maximum"] == 5000
    assert tools["bi_list_dashboards"].inputSchema["properties"]["tool"]["enum"] == ["looker", "metabase"]


@pytest.mark.parametrize("tool", ["looker", "metabase"])
def test_list_dashboards_answers_from_the_inventory(bi: BiStack, tool: str) -> None:
    ok, body = call_tool(bi[1], "bi_list_dashboards", {"tool": tool})
    assert ok, body
    assert body["total"] == 3 and {d["dashboard_id"] for d in body["dashboards"]} == {"1", "2", "3"}
    first = body["dashboards"][0]
    assert first["title"] and first["folder"] and first["view_count"] > 0 and first["created_at"]
    assert first["url"].endswith(("/dashboards/1", "/dashboard/1"))
    assert body["provenance"]["source"] == "cache" and body["provenance"]["asset"] == f"bi_inventory_{tool}"


def test_looker_elements_name_model_explore_fields_and_table(bi: BiStack) -> None:
    ok, body = call_tool(bi[1], "bi_get_dashboard_elements", {"tool": "looker", "dashboard_id": "1"})
    assert ok, body
    by_id = {e["element_id"]: e for e in body["elements"]}
    assert body["element_count"] == 5 and by_id["105"]["element_type"] == "text"
    revenue = by_id["101"]
    assert (revenue["model_name"], revenue["explore_name"]) == ("jaffle", "orders")
    assert revenue["dimensions"] == ["orders.order_date"] and revenue["measures"] == ["orders.total_revenue"]
    assert revenue["tables"] == [
        {"relation": "demo.main.orders", "database": "demo", "schema": "main", "name": "orders",
         "how": "explore_sql_table_name"}
    ]  # fmt: skip
    assert by_id["102"]["look_id"] == "1" and by_id["102"]["measures"] == ["orders.count"]
    # The broken tile is known from the latest health snapshot, which says when it was taken.
    assert by_id["103"]["has_error"] and "fulfillment_status" in by_id["103"]["error_detail"]
    assert body["errors_checked_at"] and not by_id["101"]["has_error"]


def test_metabase_elements_name_question_database_sql_and_tables(bi: BiStack) -> None:
    calls = [
        ("bi_get_dashboard_elements", {"tool": "metabase", "dashboard_id": "1"}),
        ("bi_get_dashboard_elements", {"tool": "metabase", "dashboard_id": "2"}),
    ]
    (ok1, sales), (ok2, customers) = call_tools(bi[1], calls)
    assert ok1 and ok2, (sales, customers)
    by_id = {e["element_id"]: e for e in sales["elements"]}
    orders = by_id["11"]
    assert (
        orders["question_id"] == "1" and orders["database_id"] == "1" and "from main.orders" in orders["sql"]
    )
    assert [t["relation"] for t in orders["tables"]] == ["demo.main.orders"]
    # A CTE is not a table: the question reads fct_payments_daily only.
    assert [t["relation"] for t in by_id["14"]["tables"]] == ["demo.main.fct_payments_daily"]
    assert by_id["15"]["element_type"] == "text" and by_id["15"]["question_id"] is None
    assert by_id["12"]["has_error"] and "discount_code" in by_id["12"]["error_detail"]
    # A query-builder question names its source table through the table's metadata.
    source = {e["element_id"]: e for e in customers["elements"]}["21"]
    assert source["sql"] is None and source["tables"][0]["how"] == "source_table"
    assert source["tables"][0]["relation"] == "demo.main.customers"


@pytest.mark.parametrize("tool", ["looker", "metabase"])
def test_health_finds_the_broken_and_the_empty_tile(bi: BiStack, tool: str) -> None:
    dashboard, broken, column, empty, healthy = PLANTED[tool]
    calls = [
        ("bi_check_dashboard_health", {"tool": tool, "dashboard_id": dashboard}),
        ("bi_check_dashboard_health", {"tool": tool, "dashboard_id": healthy}),
    ]
    (ok, body), (ok2, fine) = call_tools(bi[1], calls)
    assert ok and ok2, (body, fine)
    assert body["status"] == "error" and body["elements_with_errors"] == 1 and body["empty_elements"] == 1
    assert body["element_count"] == 5 and column in body["error_detail"]
    tiles = {e["element_id"]: e for e in body["elements"]}
    assert tiles[broken]["status"] == "error" and tiles[broken]["row_count"] is None
    assert tiles[empty]["status"] == "empty" and tiles[empty]["row_count"] == 0
    assert body["provenance"]["source"] == "live" and body["checked_at"].endswith("Z")
    assert fine["status"] == "ok" and fine["elements_with_errors"] == 0 and fine["error_detail"] is None


@pytest.mark.parametrize("tool", ["looker", "metabase"])
def test_verify_row_counts_reports_each_tile(
    bi: BiStack, tool: str, capsys: pytest.CaptureFixture[str]
) -> None:
    dashboard, broken, column, empty, _ = PLANTED[tool]
    ok, body = call_tool(
        bi[1], "bi_verify_row_counts", {"tool": tool, "dashboard_id": dashboard, "compare_to_warehouse": True}
    )
    assert ok, body
    tiles = {e["element_id"]: e for e in body["elements"]}
    assert body["total_elements"] == 4 and body["skipped_elements"] == 1  # the text tile has no query
    assert body["healthy_count"] == 2 and body["failing_count"] == 2
    assert tiles[broken]["row_count"] is None and column in tiles[broken]["error"]
    assert tiles[empty]["row_count"] == 0 and not tiles[empty]["meets_threshold"]
    # The orders table has rows, so the empty tile's own filter drops them all.
    assert tiles[empty]["empty_cause"] == "tile_query_filters_out_all_rows"
    assert tiles[empty]["warehouse_tables"][0]["row_count"] > 0
    healthy = [t for t in body["elements"] if t["meets_threshold"]]
    assert all(t["row_count"] >= 1 and t["error"] is None for t in healthy)
    with capsys.disabled():  # the closing note's figures: time per tile
        times = ", ".join(f"{t['element_id']}={t['elapsed_ms']:.0f}ms" for t in body["elements"])
        print(
            f"\n  bi_verify_row_counts {tool} dashboard {dashboard}: {body['elapsed_ms']:.0f} ms; tiles {times}"
        )
    # A higher threshold turns the small tiles into failures; the answer says which threshold applied.
    ok, strict = call_tool(
        bi[1], "bi_verify_row_counts", {"tool": tool, "dashboard_id": dashboard, "min_rows": 10}
    )
    assert ok and strict["min_rows"] == 10 and strict["healthy_count"] < body["healthy_count"] + 1
    assert all(e["warehouse_tables"] is None for e in strict["elements"])


# tool -> the tile of dashboard 3 that listens to its Status filter (default: a status no order has)
FILTERED = {"looker": "301", "metabase": "31"}


@pytest.mark.parametrize("tool", ["looker", "metabase"])
def test_a_tile_empty_under_its_dashboard_filter_is_reported_empty(bi: BiStack, tool: str) -> None:
    # Its own query has rows (every order); the dashboard's Status filter, at its default, leaves none.
    calls = [
        ("bi_check_dashboard_health", {"tool": tool, "dashboard_id": "3"}),
        ("bi_verify_row_counts", {"tool": tool, "dashboard_id": "3", "compare_to_warehouse": True}),
        ("bi_get_dashboard_elements", {"tool": tool, "dashboard_id": "3"}),
    ]
    (ok, health), (ok2, counts), (ok3, elements) = call_tools(bi[1], calls)
    assert ok and ok2 and ok3, (health, counts, elements)
    tile = {e["element_id"]: e for e in health["elements"]}[FILTERED[tool]]
    assert tile["status"] == "empty" and tile["row_count"] == 0 and health["empty_elements"] == 1, health
    row = {e["element_id"]: e for e in counts["elements"]}[FILTERED[tool]]
    assert row["row_count"] == 0 and not row["meets_threshold"], row
    assert row["warehouse_tables"][0]["row_count"] > 0  # the orders table has rows: the filter drops them
    shown = {e["element_id"]: e for e in elements["elements"]}[FILTERED[tool]]
    assert shown["dashboard_filters"] == {
        "Status": ["refund_pending"] if tool == "metabase" else "refund_pending"
    }


def test_run_look_returns_looker_rows(bi: BiStack) -> None:
    calls = [
        ("bi_run_look", {"look_id": 1}),
        ("bi_run_look", {"look_id": 1, "limit": 2}),
        ("bi_run_look", {"look_id": 3}),
        ("bi_run_look", {"look_id": 999}),
        ("bi_run_look", {"look_id": 1, "limit": 5001}),
    ]
    (ok, full), (ok2, two), (ok3, broken), (ok4, missing), (ok5, too_many) = call_tools(bi[1], calls)
    assert ok and ok2, (full, two)
    assert full["title"] == "Orders by Status" and full["row_count"] == len(full["rows"]) >= 5
    assert set(full["rows"][0]) == {"orders.status", "orders.count"} and not full["truncated"]
    assert sum(r["orders.count"] for r in full["rows"]) > 0
    assert two["row_count"] == 2 and two["truncated"] and two["limit"] == 2
    assert not ok3 and broken["error"] == "look_error" and "fulfillment_status" in broken["detail"]
    assert not ok4 and missing["error"] == "look_not_found"
    assert not ok5 and too_many["error"] == "invalid_argument"


def _with_bi(settings: Settings, **changes: Any) -> Settings:
    return settings.model_copy(update={"bi": settings.bi.model_copy(update=changes)})


def _customers(settings: Settings) -> list[tuple]:
    """Every customer's name and e-mail address, straight from the demo warehouse."""
    from ade_platform.emulators._warehouse import run_sql

    _, rows = run_sql(settings.warehouses["demo"].path, "select full_name, email from main.customers")
    assert rows and all(name and email for name, email in rows)
    return rows


def test_run_look_masks_personal_columns(bi: BiStack) -> None:
    """Look 4 lists customers: full_name (a PII name) and `contact` (a harmless name over the email column)."""
    ok, body = call_tool(bi[1], "bi_run_look", {"look_id": 4})
    assert ok, body
    assert body["title"] == "Customer Contact List" and body["mode"] == "rows" and body["row_count"] > 0
    assert body["masked_columns"] == [
        {"column": "customers.full_name", "reason": "pii:name"},
        {"column": "customers.contact", "reason": "pii:email"},
    ]
    for row in body["rows"]:
        assert row["customers.full_name"] == row["customers.contact"] == "<masked>"
        assert isinstance(row["customers.customer_id"], int) and row["customers.lifetime_value"] is not None
    text = json.dumps(body)
    leaked = [value for pair in _customers(bi[0]) for value in pair if value in text]
    assert leaked == []
    assert [t["relation"] for t in body["tables"]] == ["demo.main.customers"]


def test_run_look_rows_are_capped_by_bi_max_rows(bi: BiStack, tmp_path: Path) -> None:
    ok, default = call_tool(bi[1], "bi_run_look", {"look_id": 4, "limit": 5000})
    assert ok and default["limit"] == 100 and default["row_count"] == len(default["rows"]) <= 100
    assert default["truncated"] == (len(_customers(bi[0])) > 100)
    server, _ = server_for(_with_bi(bi[0], max_rows=3), tmp_path / "dagster")
    (ok, capped), (ok2, fewer) = call_tools(
        server, [("bi_run_look", {"look_id": 4}), ("bi_run_look", {"look_id": 4, "limit": 2})]
    )
    assert ok and ok2, (capped, fewer)
    assert capped["row_count"] == len(capped["rows"]) == 3 and capped["truncated"] and capped["limit"] == 3
    assert fewer["row_count"] == 2 and fewer["limit"] == 2


def test_run_look_shape_returns_no_value(bi: BiStack, tmp_path: Path) -> None:
    server, _ = server_for(_with_bi(bi[0], run_look="shape"), tmp_path / "dagster")
    (ok, contacts), (ok2, statuses) = call_tools(
        server, [("bi_run_look", {"look_id": 4}), ("bi_run_look", {"look_id": 1})]
    )
    assert ok and ok2, (contacts, statuses)
    assert contacts["mode"] == "shape" and contacts["rows"] == [] and contacts["redacted"]
    assert contacts["row_count"] == len(_customers(bi[0])) and not contacts["truncated"]
    columns = {c["name"]: c for c in contacts["columns"]}
    assert list(columns) == [
        "customers.customer_id", "customers.full_name", "customers.contact", "customers.lifetime_value",
    ]  # fmt: skip
    assert columns["customers.customer_id"]["type"] == "number"
    assert columns["customers.customer_id"]["null_percentage"] == 0.0
    assert columns["customers.contact"]["null_percentage"] is None  # masked: nothing from its values
    from ade_platform.emulators._warehouse import run_sql

    _, status_rows = run_sql(bi[0].warehouses["demo"].path, "select distinct status from main.orders")
    values = [v for pair in _customers(bi[0]) for v in pair] + [s for (s,) in status_rows]
    text = json.dumps([contacts, statuses])
    assert [v for v in values if v in text] == []
    assert statuses["rows"] == [] and statuses["row_count"] == len(status_rows)


def test_run_look_over_an_excluded_table_masks_every_column(bi: BiStack, tmp_path: Path) -> None:
    from ade_platform.config import SnowflakeExclusionSettings, SnowflakeSettings

    excluded = SnowflakeSettings(exclusions=SnowflakeExclusionSettings(patterns=["*.MAIN.ORDERS"]))
    settings = bi[0].model_copy(update={"snowflake": excluded})
    server, _ = server_for(settings, tmp_path / "dagster")
    (ok, orders), (ok2, payments) = call_tools(
        server, [("bi_run_look", {"look_id": 1}), ("bi_run_look", {"look_id": 2})]
    )
    assert ok and ok2, (orders, payments)
    reason = "excluded_table:demo.main.orders"
    assert orders["masked_columns"] == [
        {"column": "orders.status", "reason": reason},
        {"column": "orders.count", "reason": reason},
    ]
    assert orders["row_count"] > 0
    assert all(v == "<masked>" for row in orders["rows"] for v in row.values())
    assert payments["masked_columns"] == [] and payments["rows"][0]["payments_daily.total_amount"] > 0


def test_unknown_dashboards_and_bad_arguments_are_structured_errors(bi: BiStack) -> None:
    calls = [
        ("bi_check_dashboard_health", {"tool": "looker", "dashboard_id": "4242"}),
        ("bi_verify_row_counts", {"tool": "metabase", "dashboard_id": "4242"}),
        ("bi_get_dashboard_elements", {"tool": "metabase", "dashboard_id": "4242"}),
        ("bi_list_dashboards", {"tool": "tableau"}),
        ("bi_check_dashboard_health", {"tool": "looker", "dashboard_id": "../../etc"}),
        ("bi_verify_row_counts", {"tool": "looker", "dashboard_id": "1", "min_rows": -1}),
    ]
    results = call_tools(bi[1], calls)
    codes = [body["error"] for ok, body in results if not ok]
    assert codes == ["dashboard_not_found"] * 3 + ["invalid_argument"] * 3, results


def test_bad_credentials_and_unconfigured_tools(
    bi: BiStack, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = bi[0]
    wrong = settings_for(
        settings.home, ADE_LOOKER_CLIENT_SECRET="not-the-secret", ADE_METABASE_API_KEY="mb_wrong_key"
    )
    server, _ = server_for(wrong, tmp_path / "dagster")
    caplog.set_level(logging.DEBUG)
    results = call_tools(
        server,
        [
            ("bi_check_dashboard_health", {"tool": "looker", "dashboard_id": "1"}),
            ("bi_run_look", {"look_id": 1}),
            ("bi_verify_row_counts", {"tool": "metabase", "dashboard_id": "1"}),
        ],
    )
    assert [body["error"] for ok, body in results if not ok] == ["auth_failed"] * 3, results
    for _, body in results:
        assert "not-the-secret" not in json.dumps(body) and "mb_wrong_key" not in json.dumps(body)
    assert "not-the-secret" not in caplog.text and "mb_wrong_key" not in caplog.text
    # Metabase's other way in: a session from POST /api/session with a username and password.
    for password, expected in ((DEMO_PASSWORD, None), ("not-the-password", "auth_failed")):
        server, _ = server_for(with_metabase_login(settings, password), tmp_path / f"dagster-{expected}")
        ok, body = call_tool(server, "bi_verify_row_counts", {"tool": "metabase", "dashboard_id": "2"})
        assert (ok and body["healthy_count"] == 2) if expected is None else body["error"] == expected, body
        assert "not-the-password" not in json.dumps(body)
    # Nothing configured: every tool says so.
    bare = settings_for(tmp_path / "bare", ADE_LOOKER_URL="", ADE_METABASE_URL="")
    server, _ = server_for(bare, tmp_path / "dagster2")
    results = call_tools(
        server,
        [("bi_list_dashboards", {"tool": "looker"}), ("bi_run_look", {"look_id": 1}),
         ("bi_check_dashboard_health", {"tool": "metabase", "dashboard_id": "1"})],
    )  # fmt: skip
    assert [body["error"] for ok, body in results if not ok] == ["backend_not_configured"] * 3, results


def test_no_credential_in_answers_logs_or_run_tags(bi: BiStack, caplog: pytest.LogCaptureFixture) -> None:
    _, server, ctx = bi
    caplog.set_level(logging.DEBUG)
    answers = call_tools(
        server,
        [
            ("bi_list_dashboards", {"tool": "looker"}),
            ("bi_check_dashboard_health", {"tool": "looker", "dashboard_id": "1"}),
            ("bi_verify_row_counts", {"tool": "metabase", "dashboard_id": "1"}),
            ("bi_run_look", {"look_id": 2}),
            ("bi_run_look", {"look_id": 3}),
        ],
    )
    ctx.live().flush()
    runs = ctx.live().instance().get_runs()
    assert {r.tags.get(TAG_TOOL) for r in runs} >= {
        "bi_check_dashboard_health",
        "bi_verify_row_counts",
        "bi_run_look",
    }
    text = json.dumps(answers) + caplog.text + json.dumps([dict(r.tags) for r in runs])
    for secret in SECRETS:
        assert secret not in text
    assert all(json.loads(r.tags[TAG_ARGUMENTS]) is not None for r in runs if TAG_TOOL in r.tags)
