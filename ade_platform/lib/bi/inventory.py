"""The BI store snapshots (docs/STORE_ASSETS.md, "BI"): a tool's dashboard inventory, the health of every
dashboard in it, and which dashboards turned to error between two health pictures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from ade_platform.lib.bi.shapes import DashboardInfo, DashboardSummary
from ade_platform.lib.bi.tiles import TileRunner, dashboard_status, outcome_rows, run_with

# a tile's health in the health snapshot: outcome field -> its name there
ELEMENT_FIELDS = {
    "element_id": "id",
    "title": "title",
    "status": "status",
    "row_count": "row_count",
    "error": "error",
    "elapsed_ms": "elapsed_ms",
}


class DashboardSource(TileRunner, Protocol):
    tool: str

    def list_dashboards(self) -> list[DashboardSummary]: ...

    def dashboard(self, dashboard_id: str) -> DashboardInfo: ...


def collect_inventory(source: DashboardSource) -> dict[str, Any]:
    """Every dashboard with its elements and the warehouse tables each element reads."""
    dashboards = [source.dashboard(d["id"]) for d in source.list_dashboards()]
    return {"tool": source.tool, "dashboards": dashboards}


def collect_health(
    source: DashboardSource,
    inventory: Mapping[str, Any],
    *,
    concurrency: int,
    timeout: float,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run every tile of every inventoried dashboard once; per dashboard ok / error / unknown."""
    dashboards = []
    for d in inventory["dashboards"]:
        outcomes = run_with(source, d["elements"], concurrency=concurrency, timeout=timeout)
        dashboards.append(
            {
                "id": d["id"],
                "title": d["title"],
                "status": dashboard_status(outcomes),
                "elements": outcome_rows(outcomes, ELEMENT_FIELDS),
            }
        )
        if progress is not None:
            progress(d["id"])
    return {
        "tool": inventory["tool"],
        "checked_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "dashboards": dashboards,
    }


def tiles_with_status(health: Mapping[str, Any], status: str) -> list[dict[str, Any]]:
    """(dashboard, element) pairs whose tile has this status, flattened for check metadata."""
    return [
        {"dashboard_id": d["id"], "dashboard": d["title"], **e}
        for d in health["dashboards"]
        for e in d["elements"]
        if e["status"] == status
    ]


def turned_to_error(previous: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """Dashboards in error now that were not in error before (new dashboards count, already-broken ones do
    not: the sensor alerts on the transition, once)."""
    return sorted(d for d, status in current.items() if status == "error" and previous.get(d) != "error")
