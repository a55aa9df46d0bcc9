"""Store asset names of the warehouse domain (shared by the Dagster assets and the MCP tools)."""

from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


def _slug(text: str) -> str:
    return _UNSAFE.sub("_", text)


def schema_asset(warehouse: str) -> str:
    return f"warehouse_schema_{_slug(warehouse)}"


def drift_asset(warehouse: str) -> str:
    return f"warehouse_drift_{_slug(warehouse)}"


def freshness_asset(warehouse: str) -> str:
    return f"warehouse_freshness_{_slug(warehouse)}"


def duplicates_asset(warehouse: str) -> str:
    return f"warehouse_duplicates_{_slug(warehouse)}"


def profiles_asset(warehouse: str) -> str:
    return f"warehouse_profiles_{_slug(warehouse)}"


def check_name(text: str) -> str:
    """A Dagster-safe check name from a table name ("raw.orders" -> "raw_orders")."""
    return _slug(text.lower()).strip("_") or "table"
