"""The emulated Looker instance's content: one LookML model over the demo warehouse, queries, looks and
dashboards. Two tiles are planted faults: one reads a dimension whose column does not exist in the `orders`
table (the database rejects it), one filters on a status no order has (it renders, empty)."""

from __future__ import annotations

from typing import Any

CREATED = "2025-06-01T10:00:00.000+00:00"
UPDATED = "2026-02-17T14:22:00.000+00:00"

# The LookML model `jaffle`: its views (label, sql_table_name: a table, or a derived table's SQL in parentheses)
# and their fields, one row a field (view, kind, name, type, sql). A dimension without sql reads the column of its
# name, as LookML's default `sql: ${TABLE}.<name>` does; `${view.field}` and `${field}` refer to other fields.
# Every view is an explore; JOINS lists the views an explore joins (view, sql_on).
EXPLORES = {
    "orders": ("Orders", "main.orders"),
    "customers": ("Customers", "main.customers"),
    "payments_daily": ("Daily payments", "main.fct_payments_daily"),
    # A derived table renaming personal columns (quoted, spaced, upper-case names) and a CTE inside it.
    "customer_directory": (
        "Customer directory",
        '(WITH base AS (SELECT * FROM main.customers) SELECT customer_id, email AS "Email Address", '
        'email AS e_mail, full_name AS "FULL NAME ", lifetime_value FROM base)',
    ),
}
JOINS: dict[str, list[tuple[str, str]]] = {
    "orders": [("customers", "${orders.customer_id} = ${customers.customer_id}")],
}
FIELDS: list[tuple[str, str, str, str, str | None]] = [
    ("orders", "dimension", "order_id", "number", None),
    ("orders", "dimension", "customer_id", "number", None),
    ("orders", "dimension", "order_date", "date", None),
    ("orders", "dimension", "status", "string", None),
    # Planted fault: the LookML is valid, but the orders table has no such column.
    ("orders", "dimension", "fulfillment_status", "string", None),
    # Personal data reached through another view's field, and through a subquery (bi_run_look masks them).
    ("orders", "dimension", "buyer", "string", "${customers.contact}"),
    ("orders", "dimension", "buyer_label", "string", "UPPER(${customers.full_name})"),
    (
        "orders",
        "dimension",
        "buyer_lookup",
        "string",
        "(SELECT MAX(c.email) FROM main.customers AS c WHERE c.customer_id = ${TABLE}.customer_id)",
    ),
    (
        "orders",
        "dimension",
        "best_customer_value",
        "number",
        "(SELECT MAX(lifetime_value) FROM main.customers)",
    ),
    ("orders", "measure", "count", "count", "COUNT(*)"),
    ("orders", "measure", "total_revenue", "sum", "SUM(${TABLE}.amount)"),
    ("orders", "measure", "total_paid", "sum", "SUM(${TABLE}.total_paid)"),
    ("customers", "dimension", "customer_id", "number", None),
    ("customers", "dimension", "customer_since", "date", "CAST(${TABLE}.customer_since AS DATE)"),
    ("customers", "dimension", "first_order_date", "date", None),
    # Personal data: a Look over them gets them masked (bi_run_look).
    ("customers", "dimension", "full_name", "string", None),
    ("customers", "dimension", "contact", "string", "${TABLE}.email"),
    ("customers", "dimension", "lifetime_value", "number", None),
    ("customers", "measure", "count", "count", "COUNT(*)"),
    (
        "customers",
        "measure",
        "active_count",
        "number",
        "COUNT(CASE WHEN ${TABLE}.number_of_orders > 0 THEN 1 END)",
    ),
    ("customers", "measure", "total_lifetime_value", "sum", "SUM(${TABLE}.lifetime_value)"),
    ("payments_daily", "dimension", "order_date", "date", None),
    ("payments_daily", "dimension", "payment_method", "string", None),
    ("payments_daily", "measure", "total_amount", "sum", "SUM(${TABLE}.amount)"),
    ("payments_daily", "measure", "payment_count", "sum", "SUM(${TABLE}.payment_count)"),
    ("customer_directory", "dimension", "customer_id", "number", None),
    ("customer_directory", "dimension", "address_book", "string", '${TABLE}."Email Address"'),
    ("customer_directory", "dimension", "alternate", "string", "${TABLE}.e_mail"),
    ("customer_directory", "dimension", "display", "string", '${TABLE}."FULL NAME "'),
    ("customer_directory", "dimension", "value", "number", "${TABLE}.lifetime_value"),
]


def _model(
    explores: dict[str, tuple[str, str]], fields: list[tuple[str, str, str, str, str | None]]
) -> dict[str, dict[str, Any]]:
    """explore -> {label, sql_table_name, dimensions: {name: (type, sql)}, measures: {name: (type, sql)}}."""
    model: dict[str, dict[str, Any]] = {
        name: {"label": label, "sql_table_name": table, "dimensions": {}, "measures": {}}
        for name, (label, table) in explores.items()
    }
    for explore, kind, name, field_type, sql in fields:
        model[explore][f"{kind}s"][name] = (field_type, sql or f"${{TABLE}}.{name}")
    return model


# model -> explore -> {label, sql_table_name, dimensions, measures}
MODELS: dict[str, dict[str, dict[str, Any]]] = {"jaffle": _model(EXPLORES, FIELDS)}

QUERIES: dict[int, dict[str, Any]] = {
    1: {
        "view": "orders",
        "fields": ["orders.order_date", "orders.total_revenue"],
        "sorts": ["orders.order_date"],
    },
    2: {"view": "orders", "fields": ["orders.status", "orders.count"], "sorts": ["orders.count desc"]},
    3: {"view": "orders", "fields": ["orders.fulfillment_status", "orders.count"], "sorts": []},
    4: {
        "view": "orders",
        "fields": ["orders.order_id", "orders.order_date"],
        "filters": {"orders.status": "cancelled"},  # planted fault: no order has this status
        "sorts": ["orders.order_date desc"],
    },
    5: {"view": "customers", "fields": ["customers.active_count", "customers.count"], "sorts": []},
    6: {
        "view": "payments_daily",
        "fields": ["payments_daily.payment_method", "payments_daily.total_amount"],
        "sorts": ["payments_daily.total_amount desc"],
    },
    8: {"view": "orders", "fields": ["orders.order_date", "orders.count"], "sorts": ["orders.order_date"]},
    9: {
        "view": "orders",
        "fields": ["orders.order_id", "orders.buyer", "orders.buyer_label", "customers.lifetime_value"],
        "sorts": ["orders.order_id"],
    },
    10: {
        "view": "customer_directory",
        "fields": [
            "customer_directory.customer_id",
            "customer_directory.address_book",
            "customer_directory.alternate",
            "customer_directory.display",
            "customer_directory.value",
        ],
        "sorts": ["customer_directory.customer_id"],
    },
    11: {
        "view": "orders",
        "fields": ["orders.order_id", "orders.buyer_lookup", "orders.best_customer_value"],
        "sorts": ["orders.order_id"],
    },
    7: {
        "view": "customers",
        "fields": [
            "customers.customer_id",
            "customers.full_name",
            "customers.contact",
            "customers.lifetime_value",
        ],
        "sorts": ["customers.customer_id"],
    },
}

LOOKS: dict[int, dict[str, Any]] = {
    1: {"title": "Orders by Status", "query_id": 2, "folder": "5"},
    2: {"title": "Payments by Method", "query_id": 6, "folder": "6"},
    3: {"title": "Orders by Fulfillment Status", "query_id": 3, "folder": "5"},
    # On no dashboard: a list of customers with their names and e-mail addresses (personal data).
    4: {"title": "Customer Contact List", "query_id": 7, "folder": "6"},
    # Also on no dashboard: personal data through another view's fields, a derived table's renamed columns,
    # and subqueries (bi_run_look masks them by the SQL Looker runs).
    5: {"title": "Orders with Buyers", "query_id": 9, "folder": "6"},
    6: {"title": "Customer Directory", "query_id": 10, "folder": "6"},
    7: {"title": "Orders with Buyer Lookup", "query_id": 11, "folder": "6"},
}

FOLDERS = {"5": "Finance", "6": "Marketing"}

# dashboard id -> title, folder, view count, filters; its tiles are the rows of ELEMENTS
DASHBOARDS: dict[str, dict[str, Any]] = {
    "1": {"title": "Revenue Overview", "folder": "5", "view_count": 1240},
    "2": {"title": "Customer Acquisition", "folder": "6", "view_count": 320},
    # A dashboard filter: its default (a status no order has) empties the tile that listens to it, whose own
    # query has rows. Run as the dashboard renders it, the tile is empty.
    "3": {
        "title": "Order Review",
        "folder": "5",
        "view_count": 44,
        "filters": [{"name": "Status", "dimension": "orders.status", "default_value": "refund_pending"}],
    },
}
# One row a tile, in the order its dashboard shows them: (dashboard id, element id, title, type, what it shows:
# look_id | query_id | body, and `listen`, the dashboard filters it listens to).
ELEMENTS: list[tuple[str, str, str, str, dict[str, Any]]] = [
    ("1", "101", "Revenue by Day", "vis", {"query_id": 1}),
    ("1", "102", "Orders by Status", "vis", {"look_id": 1}),
    ("1", "103", "Orders by Fulfillment Status", "vis", {"query_id": 3}),
    ("1", "104", "Cancelled Orders", "vis", {"query_id": 4}),
    ("1", "105", "About this dashboard", "text", {"body": "Revenue is net of refunds."}),
    ("2", "201", "Active Customer Count", "vis", {"query_id": 5}),
    ("2", "202", "Payments by Method", "vis", {"look_id": 2}),
    ("3", "301", "Orders by Day", "vis", {"query_id": 8, "listen": {"Status": "orders.status"}}),
]


def _place_elements(
    dashboards: dict[str, dict[str, Any]], elements: list[tuple[str, str, str, str, dict[str, Any]]]
) -> None:
    """Each dashboard's `elements`: {id, title, type, look_id | query_id | body, listen} per tile."""
    for dashboard in dashboards.values():
        dashboard["elements"] = []
    for dashboard_id, element_id, title, element_type, shows in elements:
        dashboards[dashboard_id]["elements"].append(
            {"id": element_id, "title": title, "type": element_type, **shows}
        )


_place_elements(DASHBOARDS, ELEMENTS)


def query_json(query_id: int) -> dict[str, Any]:
    q = QUERIES[query_id]
    return {
        "id": str(query_id),
        "model": "jaffle",
        "view": q["view"],
        "fields": q["fields"],
        "pivots": None,
        "fill_fields": None,
        "filters": q.get("filters"),
        "filter_expression": None,
        "sorts": q.get("sorts") or None,
        "limit": "500",
        "column_limit": None,
        "total": False,
        "row_total": None,
        "subtotals": None,
        "vis_config": None,
        "dynamic_fields": None,
        "slug": f"q{query_id:04d}",
        "query_timezone": "UTC",
        "has_table_calculations": False,
        "url": f"/explore/jaffle/{q['view']}?qid=q{query_id:04d}",
    }


def folder_json(folder_id: str) -> dict[str, Any]:
    return {"id": folder_id, "name": FOLDERS[folder_id], "parent_id": "1", "content_metadata_id": folder_id}


def _filed(item: dict[str, Any]) -> dict[str, Any]:
    """Where a Look or a dashboard is filed and when it was made and changed (one made through the API has its
    own times; the demo content has the instance's)."""
    return {
        "folder": folder_json(item["folder"]),
        "folder_id": item["folder"],
        "created_at": item.get("created_at", CREATED),
        "updated_at": item.get("updated_at", UPDATED),
    }


def look_json(look_id: int, with_query: bool = True) -> dict[str, Any]:
    look = LOOKS[look_id]
    body: dict[str, Any] = {
        "id": str(look_id),
        "title": look["title"],
        "query_id": str(look["query_id"]),
        "model": {"id": "jaffle", "label": "Jaffle shop"},
        **_filed(look),
        "view_count": 57,
        "short_url": f"/x/look{look_id}",
        "url": f"/looks/{look_id}",
        "deleted": False,
    }
    if with_query:
        body["query"] = query_json(look["query_id"])
    return body


def filter_json(dashboard_id: str, row: int, f: dict[str, Any]) -> dict[str, Any]:
    """A DashboardFilter of API 4.0 (type `field`: it filters on an explore's dimension)."""
    explore = f["dimension"].split(".")[0]
    return {
        "id": f"{dashboard_id}{row:02d}",
        "dashboard_id": dashboard_id,
        "name": f["name"],
        "title": f["name"],
        "type": "field",
        "default_value": f.get("default_value"),
        "model": "jaffle",
        "explore": explore,
        "dimension": f["dimension"],
        "row": row,
        "listens_to_filters": [],
        "allow_multiple_values": True,
        "required": False,
    }


def result_maker_json(element: dict[str, Any]) -> dict[str, Any] | None:
    """What a tile's query listens to: a ResultMakerWithIdVisConfigAndDynamicFields whose filterables map each
    dashboard filter to the field it filters."""
    listen = element.get("listen")
    query_id = element.get("query_id") or (
        LOOKS[element["look_id"]]["query_id"] if element.get("look_id") else None
    )
    if not listen or query_id is None:
        return None
    view = QUERIES[query_id]["view"]
    return {
        "id": element["id"],
        "query_id": str(query_id),
        "query": query_json(query_id),
        "filterables": [
            {
                "model": "jaffle",
                "view": view,
                "name": element["title"],
                "listen": [{"dashboard_filter_name": n, "field": f} for n, f in listen.items()],
            }
        ],
        "sorts": [],
        "merge_result_id": None,
        "total": False,
        "query_timezone": "UTC",
        "dynamic_fields": None,
        "sql_query_id": None,
        "vis_config": None,
    }


def element_json(dashboard_id: str, element: dict[str, Any]) -> dict[str, Any]:
    look_id = element.get("look_id")
    query_id = element.get("query_id")
    maker = result_maker_json(element)
    return {
        "id": element["id"],
        "dashboard_id": dashboard_id,
        "title": element["title"],
        "title_text": element["title"] if element["type"] == "text" else None,
        "type": element["type"],
        "body_text": element.get("body"),
        "note_text": None,
        "subtitle_text": None,
        "look_id": str(look_id) if look_id else None,
        "look": look_json(look_id) if look_id else None,
        "query_id": str(query_id) if query_id else None,
        "query": query_json(query_id) if query_id else None,
        "result_maker_id": int(maker["id"]) if maker else None,
        "result_maker": maker,
    }


def dashboard_json(dashboard_id: str, with_elements: bool = True) -> dict[str, Any]:
    d = DASHBOARDS[dashboard_id]
    body: dict[str, Any] = {
        "id": dashboard_id,
        "title": d["title"],
        "description": None,
        **_filed(d),
        "last_updated_at": d.get("updated_at", UPDATED),
        "view_count": d["view_count"],
        "favorite_count": 3,
        "hidden": False,
        "readonly": False,
        "deleted": False,
        "slug": f"dash{dashboard_id}",
        "user_id": "1",
        "url": f"/dashboards/{dashboard_id}",
        "dashboard_filters": [filter_json(dashboard_id, i, f) for i, f in enumerate(d.get("filters") or [])],
    }
    if with_elements:
        body["dashboard_elements"] = [element_json(dashboard_id, e) for e in d["elements"]]
    return body


def explore_json(model: str, explore: str) -> dict[str, Any]:
    e = MODELS[model][explore]
    views = [explore, *(view for view, _ in JOINS.get(explore, []))]

    def fields(kind: str) -> list[dict[str, Any]]:
        return [
            {
                "name": f"{view}.{name}",
                "label": name.replace("_", " ").title(),
                "type": ftype,
                "category": kind[:-1],
                "view": view,
                "sql": sql,
                "is_filter": False,
                "hidden": False,
            }
            for view in views
            for name, (ftype, sql) in MODELS[model][view][kind].items()
        ]

    return {
        "id": f"{model}::{explore}",
        "name": explore,
        "label": e["label"],
        "model_name": model,
        "view_name": explore,
        "sql_table_name": e["sql_table_name"],
        "connection_name": "demo_warehouse",
        "fields": {
            "dimensions": fields("dimensions"),
            "measures": fields("measures"),
            "filters": [],
            "parameters": [],
        },
    }


def create_dashboard(title: str, folder_id: str, now: str) -> str:
    """A new, empty dashboard (Looker's create_dashboard); its id."""
    dashboard_id = str(max(int(i) for i in DASHBOARDS) + 1)
    DASHBOARDS[dashboard_id] = {
        "title": title,
        "folder": folder_id,
        "view_count": 0,
        "elements": [],
        "created_at": now,
        "updated_at": now,
    }
    return dashboard_id
