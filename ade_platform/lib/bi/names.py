"""Store asset names of the BI domain (docs/STORE_ASSETS.md)."""

from __future__ import annotations

BI_TOOLS = ("looker", "metabase")


def inventory_asset(tool: str) -> str:
    return f"bi_inventory_{tool}"


def health_asset(tool: str) -> str:
    return f"bi_health_{tool}"
