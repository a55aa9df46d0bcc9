"""BI assets, per configured tool (Looker, Metabase): the dashboard inventory (dashboards, tiles, the warehouse
tables each tile reads) and the dashboard health (every tile run once, with asset checks on broken and empty
tiles).

Both assets come after the dbt models: the tiles read the tables dbt builds, so a materialization of
everything checks the dashboards against the warehouse it just built.
"""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from collections.abc import Callable
from typing import Any, TypeVar

import dagster as dg

from ade_platform.clients.bi import BiError, open_client
from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Polled
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.step_failure import reach_in_step
from ade_platform.defs.store_results import stored_result
from ade_platform.lib.bi.inventory import collect_health, collect_inventory, tiles_with_status
from ade_platform.lib.bi.names import health_asset, inventory_asset
from ade_platform.store import SnapshotNotFound

GROUP = "bi"
BROKEN_CHECK = "no_broken_tiles"
EMPTY_CHECK = "no_empty_tiles"
T = TypeVar("T")


def bi_tool(settings: Settings, tool: str) -> Polled[Any]:
    """A configured BI tool, as its assets read it and the dashboard-error sensor polls it."""
    return Polled(
        tool,
        getattr(settings.bi, tool).base_url,
        lambda: open_client(settings, tool),
        (BiError,),
        f"bi.{tool}",
    )


def _from_tool(settings: Settings, tool: str, collect: Callable[[Any], T]) -> T:
    """What `collect` gathers through a client of the tool, closed after; a BI failure fails the step."""
    with reach_in_step(bi_tool(settings, tool)) as client:
        return collect(client)


def _tile_table(tiles: list[dict[str, Any]]) -> str:
    if not tiles:
        return "none"
    rows = [
        f"| {t['dashboard']} ({t['dashboard_id']}) | {t['title'] or t['id']} | {t['error'] or '-'} |"
        for t in tiles
    ]
    return "| dashboard | tile | error |\n|---|---|---|\n" + "\n".join(rows)


def inventory_asset_def(tool: str, settings: Settings, upstream: list[dg.AssetKey]) -> Any:
    @dg.asset(
        name=inventory_asset(tool),
        group_name=GROUP,
        deps=upstream,
        kinds={tool},
        required_resource_keys={"store"},
        description=f"Every {tool} dashboard with its tiles: the query behind each (model, explore, fields; or "
        "question, database, SQL) and the warehouse tables it reads (sqlglot over its SQL, or the explore's "
        "sql_table_name). bi_list_dashboards and bi_get_dashboard_elements answer from it; cross-stack lineage "
        "reads its tables.",
    )
    def bi_inventory(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        store: StoreResource = context.resources.store
        data = _from_tool(settings, tool, collect_inventory)
        prov = store.writer().publish(
            inventory_asset(tool), data, run_id=context.run.run_id, source={"tool": tool}
        )
        elements = [e for d in data["dashboards"] for e in d["elements"]]
        tables = sorted({t["relation"] for e in elements for t in e["tables"]})
        return stored_result(
            prov,
            {
                "dashboards": len(data["dashboards"]),
                "elements": len(elements),
                "tables_read": dg.MetadataValue.json(tables),
            },
        )

    return bi_inventory


def health_asset_def(tool: str, settings: Settings) -> Any:
    @dg.asset(
        name=health_asset(tool),
        group_name=GROUP,
        deps=[dg.AssetKey(inventory_asset(tool))],
        kinds={tool},
        required_resource_keys={"store"},
        check_specs=[
            dg.AssetCheckSpec(BROKEN_CHECK, asset=health_asset(tool), description="No tile fails to run."),
            dg.AssetCheckSpec(
                EMPTY_CHECK, asset=health_asset(tool), description="No tile renders without rows."
            ),
        ],
        description=f"Runs every tile of every inventoried {tool} dashboard once (read-only, bounded concurrency, "
        "per-tile timeout): per dashboard ok / error, per tile ok / error / empty with its row count and error. "
        f"Checks: {BROKEN_CHECK} (error), {EMPTY_CHECK} (warning).",
    )
    def bi_health(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        store: StoreResource = context.resources.store
        try:
            inventory = store.reader().latest(inventory_asset(tool)).data
        except SnapshotNotFound:
            raise dg.Failure(description=f"materialize {inventory_asset(tool)} first") from None
        data = _from_tool(
            settings,
            tool,
            lambda client: collect_health(
                client,
                inventory,
                concurrency=settings.bi.max_concurrency,
                timeout=settings.bi.tile_timeout_seconds,
                progress=lambda d: context.log.info(f"{tool} dashboard {d} checked"),
            ),
        )
        prov = store.writer().publish(
            health_asset(tool), data, run_id=context.run.run_id, source={"tool": tool}
        )
        broken = tiles_with_status(data, "error")
        empty = tiles_with_status(data, "empty")
        in_error = [d["id"] for d in data["dashboards"] if d["status"] == "error"]
        return stored_result(
            prov,
            {
                "dashboards": len(data["dashboards"]),
                "dashboards_in_error": dg.MetadataValue.json(in_error),
                "broken_tiles": len(broken),
                "empty_tiles": len(empty),
            },
            check_results=[
                dg.AssetCheckResult(
                    check_name=BROKEN_CHECK,
                    passed=not broken,
                    severity=dg.AssetCheckSeverity.ERROR,
                    metadata={"count": len(broken), "tiles": dg.MetadataValue.md(_tile_table(broken))},
                ),
                dg.AssetCheckResult(
                    check_name=EMPTY_CHECK,
                    passed=not empty,
                    severity=dg.AssetCheckSeverity.WARN,
                    metadata={"count": len(empty), "tiles": dg.MetadataValue.md(_tile_table(empty))},
                ),
            ],
        )

    return bi_health
