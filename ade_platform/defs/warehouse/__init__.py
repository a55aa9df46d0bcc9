"""warehouse: schema snapshots (INFORMATION_SCHEMA) of each configured warehouse, published to the store."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
from pathlib import Path

from dagster import AssetExecutionContext, AssetKey, DataVersion, MaterializeResult, asset

from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.lib.warehouse_schema import snapshot_duckdb

GROUP = "warehouse"


def schema_asset_name(warehouse: str) -> str:
    return f"warehouse_schema_{warehouse}"


def build_warehouse_assets(settings: Settings, upstream: list[AssetKey]) -> list:
    assets = []
    for name, wh in settings.warehouses.items():
        if wh.type != "duckdb":
            continue  # Snowflake and BigQuery snapshots arrive with the warehouse issue.
        assets.append(_duckdb_schema_asset(name, Path(wh.path), list(wh.schemas), upstream))
    return assets


def _duckdb_schema_asset(name: str, path: Path, schemas: list[str], upstream: list[AssetKey]):
    @asset(
        name=schema_asset_name(name),
        group_name=GROUP,
        deps=upstream,
        description=f"Schema snapshot of warehouse '{name}' (DuckDB INFORMATION_SCHEMA): tables, columns, types.",
        kinds={"duckdb"},
    )
    def warehouse_schema(context: AssetExecutionContext, store: StoreResource):
        snapshot = snapshot_duckdb(path, schemas)
        prov = store.writer().publish(
            schema_asset_name(name),
            snapshot,
            run_id=context.run_id,
            source={"warehouse": name, "type": "duckdb", "path": str(path)},
        )
        return MaterializeResult(
            metadata={"table_count": snapshot["table_count"], "store_version": prov.version},
            data_version=DataVersion(prov.data_version),
        )

    return warehouse_schema
