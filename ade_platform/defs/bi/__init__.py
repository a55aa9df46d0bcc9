"""bi: per configured BI tool (Looker, Metabase), the dashboard inventory (dashboards, tiles, the warehouse
tables each tile reads) and the dashboard health (every tile run once, with asset checks on broken and empty
tiles), a job and schedule that refresh both, and a sensor that notices a dashboard turning to error.

Both assets come after the dbt models: the tiles read the tables dbt builds, so a materialization of
everything checks the dashboards against the warehouse it just built.
"""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import hashlib
import json
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetSelection,
    DataVersion,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    Failure,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    ScheduleDefinition,
    SensorEvaluationContext,
    SkipReason,
    asset,
    define_asset_job,
    sensor,
)

from ade_platform.clients.bi import BiError, open_client
from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.lib.bi.inventory import (
    collect_health,
    collect_inventory,
    tiles_with_status,
    turned_to_error,
)
from ade_platform.lib.bi.names import health_asset, inventory_asset
from ade_platform.store import SnapshotNotFound, StoreReader

GROUP = "bi"
BROKEN_CHECK = "no_broken_tiles"
EMPTY_CHECK = "no_empty_tiles"
REFRESH_JOB = "refresh_bi"

__all__ = ["GROUP", "build_bi_definitions"]


def _fail(exc: BiError) -> Failure:
    return Failure(description=f"{exc.code}: {exc.detail}")


def _tile_table(tiles: list[dict[str, Any]]) -> str:
    if not tiles:
        return "none"
    rows = [
        f"| {t['dashboard']} ({t['dashboard_id']}) | {t['title'] or t['id']} | {t['error'] or '-'} |"
        for t in tiles
    ]
    return "| dashboard | tile | error |\n|---|---|---|\n" + "\n".join(rows)


def inventory_asset_def(tool: str, settings: Settings, upstream: list[AssetKey]) -> Any:
    @asset(
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
    def bi_inventory(context: AssetExecutionContext) -> MaterializeResult:
        store: StoreResource = context.resources.store
        try:
            client = open_client(settings, tool)
            try:
                data = collect_inventory(client)
            finally:
                client.close()
        except BiError as exc:
            raise _fail(exc) from None
        prov = store.writer().publish(
            inventory_asset(tool), data, run_id=context.run.run_id, source={"tool": tool}
        )
        elements = [e for d in data["dashboards"] for e in d["elements"]]
        tables = sorted({t["relation"] for e in elements for t in e["tables"]})
        return MaterializeResult(
            metadata={
                "dashboards": len(data["dashboards"]),
                "elements": len(elements),
                "tables_read": MetadataValue.json(tables),
                "store_version": prov.version,
            },
            data_version=DataVersion(prov.data_version),
        )

    return bi_inventory


def health_asset_def(tool: str, settings: Settings) -> Any:
    @asset(
        name=health_asset(tool),
        group_name=GROUP,
        deps=[AssetKey(inventory_asset(tool))],
        kinds={tool},
        required_resource_keys={"store"},
        check_specs=[
            AssetCheckSpec(BROKEN_CHECK, asset=health_asset(tool), description="No tile fails to run."),
            AssetCheckSpec(
                EMPTY_CHECK, asset=health_asset(tool), description="No tile renders without rows."
            ),
        ],
        description=f"Runs every tile of every inventoried {tool} dashboard once (read-only, bounded concurrency, "
        "per-tile timeout): per dashboard ok / error, per tile ok / error / empty with its row count and error. "
        f"Checks: {BROKEN_CHECK} (error), {EMPTY_CHECK} (warning).",
    )
    def bi_health(context: AssetExecutionContext) -> MaterializeResult:
        store: StoreResource = context.resources.store
        try:
            inventory = store.reader().latest(inventory_asset(tool)).data
        except SnapshotNotFound:
            raise Failure(description=f"materialize {inventory_asset(tool)} first") from None
        try:
            client = open_client(settings, tool)
            try:
                data = collect_health(
                    client,
                    inventory,
                    concurrency=settings.bi.max_concurrency,
                    timeout=settings.bi.tile_timeout_seconds,
                    progress=lambda d: context.log.info(f"{tool} dashboard {d} checked"),
                )
            finally:
                client.close()
        except BiError as exc:
            raise _fail(exc) from None
        prov = store.writer().publish(
            health_asset(tool), data, run_id=context.run.run_id, source={"tool": tool}
        )
        broken = tiles_with_status(data, "error")
        empty = tiles_with_status(data, "empty")
        in_error = [d["id"] for d in data["dashboards"] if d["status"] == "error"]
        return MaterializeResult(
            metadata={
                "dashboards": len(data["dashboards"]),
                "dashboards_in_error": MetadataValue.json(in_error),
                "broken_tiles": len(broken),
                "empty_tiles": len(empty),
                "store_version": prov.version,
            },
            check_results=[
                AssetCheckResult(
                    check_name=BROKEN_CHECK,
                    passed=not broken,
                    severity=AssetCheckSeverity.ERROR,
                    metadata={"count": len(broken), "tiles": MetadataValue.md(_tile_table(broken))},
                ),
                AssetCheckResult(
                    check_name=EMPTY_CHECK,
                    passed=not empty,
                    severity=AssetCheckSeverity.WARN,
                    metadata={"count": len(empty), "tiles": MetadataValue.md(_tile_table(empty))},
                ),
            ],
            data_version=DataVersion(prov.data_version),
        )

    return bi_health


def dashboard_error_sensor(settings: Settings, job: Any) -> Any:
    @sensor(
        name="bi_dashboard_error_sensor",
        job=job,
        minimum_interval_seconds=settings.bi.sensor_interval_seconds,
        default_status=DefaultSensorStatus.RUNNING,
        description="Runs the tiles of every inventoried dashboard (read-only) and, when a dashboard turns to "
        "error (confirmed by a second look, so a passing lock or timeout does not alert), re-materializes the "
        "BI health assets so their checks record it.",
    )
    def bi_dashboard_error_sensor(context: SensorEvaluationContext) -> Any:
        reader = StoreReader(settings.store_root)
        previous: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
        current: dict[str, str] = {}
        for tool in settings.bi.tools:
            try:
                inventory = reader.latest(inventory_asset(tool)).data
            except SnapshotNotFound:
                continue
            try:
                client = open_client(settings, tool)
                try:
                    health = collect_health(
                        client,
                        inventory,
                        concurrency=settings.bi.max_concurrency,
                        timeout=settings.bi.tile_timeout_seconds,
                    )
                    for d in health["dashboards"]:
                        current[f"{tool}:{d['id']}"] = d["status"]
                    suspects = {
                        k.split(":", 1)[1]
                        for k in turned_to_error(previous, current)
                        if k.startswith(f"{tool}:")
                    }
                    if suspects:  # a second look before alerting
                        again = {
                            "tool": tool,
                            "dashboards": [d for d in inventory["dashboards"] if d["id"] in suspects],
                        }
                        confirm = collect_health(
                            client,
                            again,
                            concurrency=settings.bi.max_concurrency,
                            timeout=settings.bi.tile_timeout_seconds,
                        )
                        for d in confirm["dashboards"]:
                            current[f"{tool}:{d['id']}"] = d["status"]
                finally:
                    client.close()
            except BiError as exc:
                context.log.warning(f"{tool} not readable now ({exc.code}): {exc.detail}")
                current.update({k: v for k, v in previous.items() if k.startswith(f"{tool}:")})
        newly = turned_to_error(previous, current)
        context.update_cursor(json.dumps(current, sort_keys=True))
        if not newly:
            return SkipReason(f"no dashboard turned to error ({len(current)} checked)")
        return RunRequest(
            run_key=f"bi-error:{','.join(newly)}:{hashlib.sha1(context.cursor.encode()).hexdigest()[:12]}",
            tags={
                "ade/source": "sensor",
                "ade/reason": "dashboard turned to error",
                "ade/dashboards": ",".join(newly)[:200],
            },
        )

    return bi_dashboard_error_sensor


def build_bi_definitions(settings: Settings, upstream: list[AssetKey]) -> Definitions:
    """The BI assets of every configured tool; empty when none is configured."""
    tools = settings.bi.tools
    if not tools:
        return Definitions()
    assets: list = []
    for tool in tools:
        assets += [inventory_asset_def(tool, settings, upstream), health_asset_def(tool, settings)]
    selection = AssetSelection.assets(
        *[AssetKey(n(t)) for t in tools for n in (inventory_asset, health_asset)]
    )
    refresh = define_asset_job(
        REFRESH_JOB, selection=selection, description="Re-inventory the BI dashboards and check their health."
    )
    schedule = ScheduleDefinition(
        name="bi_refresh_schedule",
        job=refresh,
        cron_schedule=settings.schedules.metadata_cron,
        execution_timezone=settings.schedules.timezone,
        description="Keeps the BI inventory and health snapshots fresh for the bi-api tools.",
        default_status=DefaultScheduleStatus.RUNNING,
    )
    return Definitions(
        assets=assets,
        jobs=[refresh],
        schedules=[schedule],
        sensors=[dashboard_error_sensor(settings, refresh)],
    )
