"""The BI store snapshots (docs/STORE_ASSETS.md, "BI"): a tool's dashboard inventory, the health of every
dashboard in it, and which dashboards turned to error between two health pictures."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from ade_platform.lib.bi.shapes import DashboardInfo, DashboardSummary, ElementInfo
from ade_platform.lib.bi.tiles import dashboard_status, run_tiles


class DashboardSource(Protocol):
    tool: str

    def list_dashboards(self) -> list[DashboardSummary]: ...

    def dashboard(self, dashboard_id: str) -> DashboardInfo: ...

    def run_element(self, element: ElementInfo, timeout: float) -> int: ...


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
        outcomes = run_tiles(
            d["elements"],
            lambda e: source.run_element(e, timeout),
            concurrency=concurrency,
            timeout=timeout,
        )
        dashboards.append(
            {
                "id": d["id"],
                "title": d["title"],
                "status": dashboard_status(outcomes),
                "elements": [
                    {
                        "id": o["element_id"],
                        "title": o["title"],
                        "status": o["status"],
                        "row_count": o["row_count"],
                        "error": o["error"],
                        "elapsed_ms": o["elapsed_ms"],
                    }
                    for o in outcomes
                ],
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
