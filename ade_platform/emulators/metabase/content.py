"""The emulated Metabase instance's content: one database (the demo warehouse), its tables, questions and
dashboards. Two dashcards are planted faults: one question selects a column the `orders` table does not have,
one filters on a status no order has.

`METABASE_EMULATOR_CONTENT` names a JSON file of other content (`tables`, `cards`, `dashboards`, `collections`,
keyed by id as here; a dashboard's `dashcards` are [dashcard id, card id or null] pairs): dashboards over a
warehouse of one's own (the lineage evaluation's generated projects).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

CREATED = "2025-08-15T09:00:00.000Z"
UPDATED = "2026-02-10T11:00:00.000Z"
DATABASE = {"id": 1, "name": "Demo warehouse", "engine": "duckdb", "is_sample": False, "is_on_demand": False}
# What every table shares: it lives in the one database and is a plain table
IN_DATABASE = {"db_id": DATABASE["id"], "db": DATABASE, "entity_type": "entity/GenericTable"}
TABLES = {
    10: {"schema": "main", "name": "orders", "display_name": "Orders"},
    11: {"schema": "main", "name": "customers", "display_name": "Customers"},
    12: {"schema": "main", "name": "fct_payments_daily", "display_name": "Fct Payments Daily"},
}
COLLECTIONS = {2: "Sales", 3: "Customer Success"}
MAX_RESULTS = 2000  # Metabase caps a question's ad-hoc results at 2,000 rows

CARDS: dict[int, dict[str, Any]] = {
    1: {
        "name": "Orders per Month",
        "display": "line",
        "native": "select date_trunc('month', order_date) as month, count(*) as orders\n"
        "from main.orders\ngroup by 1\norder by 1",
    },
    2: {
        "name": "Customer Count",
        "display": "scalar",
        "mbql": {"source-table": 11, "aggregation": [["count"]]},
    },
    3: {
        # Planted fault: the orders table has no discount_code column.
        "name": "Orders by Discount Code",
        "display": "bar",
        "native": "select discount_code, count(*) as orders\nfrom main.orders\ngroup by 1",
    },
    4: {
        # Planted fault: no order has this status, so the question renders with no rows.
        "name": "Cancelled Orders",
        "display": "table",
        "native": "select order_id, order_date\nfrom main.orders\nwhere status = 'cancelled'",
    },
    5: {
        "name": "Revenue by Payment Method",
        "display": "pie",
        "native": "with daily as (\n  select payment_method, amount from main.fct_payments_daily\n)\n"
        "select payment_method, sum(amount) as revenue\nfrom daily\ngroup by 1\norder by 2 desc",
    },
    6: {"name": "Recent Orders", "display": "table", "mbql": {"source-table": 10, "limit": 100}},
    # A SQL variable in an optional clause: every order without a value, the orders of one status with one.
    7: {
        "name": "Orders by Day",
        "display": "line",
        "native": "select order_date, count(*) as orders\nfrom main.orders\n[[where status = {{status}}]]\n"
        "group by 1\norder by 1",
        "tags": {"status": "text"},
    },
}

DASHBOARDS: dict[int, dict[str, Any]] = {
    1: {
        "name": "Sales Overview",
        "collection_id": 2,
        "view_count": 512,
        "dashcards": [(11, 1), (12, 3), (13, 4), (14, 5), (15, None)],
    },
    2: {"name": "Customers", "collection_id": 3, "view_count": 87, "dashcards": [(21, 2), (22, 6)]},
    # A dashboard parameter whose default (a status no order has) empties the question wired to it; the question
    # alone has rows. Run as the dashboard renders it, the dashcard is empty.
    3: {
        "name": "Order Review",
        "collection_id": 2,
        "view_count": 31,
        "dashcards": [(31, 7)],
        "parameters": [
            {
                "id": "5e1ec7ed",
                "name": "Status",
                "slug": "status",
                "type": "string/=",
                "default": ["refund_pending"],
            }
        ],
        "mappings": {31: {"5e1ec7ed": ["variable", ["template-tag", "status"]]}},
    },
}
_OPTIONAL = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)
_TAG = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def collection_json(collection_id: int) -> dict[str, Any]:
    return {"id": collection_id, "name": COLLECTIONS[collection_id], "location": "/", "archived": False}


def _header(item_id: int, name: str) -> dict[str, Any]:
    """A card's or a dashboard's first fields: its id, its name and its description (the demo's have none)."""
    return {"id": item_id, "name": name, "description": None}


def _filed(collection_id: int) -> dict[str, Any]:
    """Where a card or a dashboard is filed, and Metabase's stamps on it."""
    return {"collection_id": collection_id, "archived": False, "created_at": CREATED, "updated_at": UPDATED}


def table_json(table_id: int) -> dict[str, Any]:
    return {"id": table_id, **IN_DATABASE, **TABLES[table_id]}


def dataset_query(card_id: int) -> dict[str, Any]:
    card = CARDS[card_id]
    if "native" in card:
        tags = {
            name: {"id": f"{card_id}-{name}", "name": name, "display-name": name.title(), "type": kind}
            for name, kind in (card.get("tags") or {}).items()
        }
        return {"type": "native", "native": {"query": card["native"], "template-tags": tags}, "database": 1}
    return {"type": "query", "query": card["mbql"], "database": 1}


def card_json(card_id: int) -> dict[str, Any]:
    card = CARDS[card_id]
    return {
        **_header(card_id, card["name"]),
        "display": card["display"],
        "type": "question",
        "query_type": "native" if "native" in card else "query",
        "dataset_query": dataset_query(card_id),
        "database_id": DATABASE["id"],
        "table_id": card.get("mbql", {}).get("source-table"),
        **_filed(2),
        "visualization_settings": {},
        "result_metadata": None,
    }


def dashboard_json(dashboard_id: int, with_cards: bool = True) -> dict[str, Any]:
    d = DASHBOARDS[dashboard_id]
    body: dict[str, Any] = {
        **_header(dashboard_id, d["name"]),
        **_filed(d["collection_id"]),
        "view_count": d["view_count"],
        "creator_id": 1,
        "parameters": list(d.get("parameters") or []),
    }
    if with_cards:
        body["collection"] = collection_json(d["collection_id"])
        body["dashcards"] = []
        for i, (dashcard_id, card_id) in enumerate(d["dashcards"]):
            body["dashcards"].append(
                {
                    "id": dashcard_id,
                    "dashboard_id": dashboard_id,
                    "card_id": card_id,
                    "card": card_json(card_id) if card_id else None,
                    "row": (i // 2) * 4,
                    "col": (i % 2) * 12,
                    "size_x": 12,
                    "size_y": 4,
                    "parameter_mappings": [
                        {"parameter_id": pid, "card_id": card_id, "target": target}
                        for pid, target in (d.get("mappings") or {}).get(dashcard_id, {}).items()
                    ],
                    "visualization_settings": (
                        {} if card_id else {"virtual_card": {"display": "text"}, "text": "Figures in USD."}
                    ),
                }
            )
    return body


def card_sql(card_id: int, values: dict[str, Any] | None = None) -> tuple[str, list[Any]]:
    """The SQL Metabase sends the database for a question, and its bound values: native as written, its SQL
    variables bound from `values` (tag name -> value) and an optional clause `[[...]]` kept only when every
    variable in it has a value; query-builder compiled."""
    card = CARDS[card_id]
    values = values or {}
    if "native" in card:
        params: list[Any] = []

        def clause(match: re.Match[str]) -> str:
            return match[1] if all(t in values for t in _TAG.findall(match[1])) else ""

        def bind(match: re.Match[str]) -> str:
            params.append(values[match[1]])
            return "?"

        return _TAG.sub(bind, _OPTIONAL.sub(clause, card["native"])), params
    mbql = card["mbql"]
    table = TABLES[mbql["source-table"]]
    select = "count(*) AS count" if mbql.get("aggregation") == [["count"]] else "*"
    sql = f'SELECT {select} FROM "{table["schema"]}"."{table["name"]}"'
    return sql + f" LIMIT {int(mbql.get('limit') or MAX_RESULTS)}", []


def parameter_values(dashboard_id: int, dashcard_id: int, given: list[dict[str, Any]]) -> dict[str, Any]:
    """Template tag -> value of the parameters a dashcard query was given, through the dashcard's mappings (a
    parameter the dashcard is not wired to is ignored, as Metabase ignores it)."""
    mappings = (DASHBOARDS[dashboard_id].get("mappings") or {}).get(dashcard_id, {})
    values: dict[str, Any] = {}
    for p in given:
        target = mappings.get(p.get("id"))
        value = p.get("value")
        if target and target[0] == "variable" and value not in (None, []):
            values[target[1][1]] = value[0] if isinstance(value, list) and len(value) == 1 else value
    return values


def _load_content(path: str | None) -> None:
    if not path:
        return
    data = json.loads(Path(path).read_text())
    for target, key in (
        (TABLES, "tables"),
        (CARDS, "cards"),
        (DASHBOARDS, "dashboards"),
        (COLLECTIONS, "collections"),
    ):
        if key in data:
            target.clear()
            target.update({int(k): v for k, v in data[key].items()})
    for dash in DASHBOARDS.values():
        dash["dashcards"] = [tuple(pair) for pair in dash.get("dashcards") or []]


_load_content(os.environ.get("METABASE_EMULATOR_CONTENT"))
