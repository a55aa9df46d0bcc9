"""The Dagster code location: one explicit Definitions built from the domains.

Settings are read when Dagster loads the code location (the @definitions function), not at import.
"""

from __future__ import annotations

import os

import dagster as dg

from ade_platform.config import Settings, load_settings
from ade_platform.defs.datasets import build_dataset_assets, build_dataset_schedules
from ade_platform.defs.dbt import ARTIFACTS_GROUP, build_dbt_assets, build_dbt_sensors, dbt_resource
from ade_platform.defs.lineage import GROUP as LINEAGE_GROUP
from ade_platform.defs.lineage import build_lineage_definitions
from ade_platform.defs.orchestration import GROUP as ORCHESTRATION_GROUP
from ade_platform.defs.orchestration import build_orchestration_definitions
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.warehouse import GROUP as WAREHOUSE_GROUP
from ade_platform.defs.warehouse import build_warehouse_definitions, sensor_evaluated_checks

METADATA_JOB = "refresh_metadata"
EVERYTHING_JOB = "build_everything"


def build_definitions(settings: Settings) -> dg.Definitions:
    if settings.dbt is not None and settings.dbt.warehouse:
        wh = settings.warehouse(settings.dbt.warehouse)
        if wh.type == "duckdb":
            # dbt reads its DuckDB path from the environment of the dbt subprocess (see profiles.yml).
            os.environ["ADE_DUCKDB_PATH"] = str(wh.path)
            wh.path.parent.mkdir(parents=True, exist_ok=True)
    assets: list = [*build_dataset_assets(settings)]
    dbt_defs = build_dbt_assets(settings)
    assets += dbt_defs
    model_keys = list(dbt_defs[0].keys) if dbt_defs else []
    warehouse_defs = build_warehouse_definitions(settings, upstream=model_keys)

    sensor_only = sensor_evaluated_checks(settings)
    metadata = (
        dg.AssetSelection.groups(ARTIFACTS_GROUP, WAREHOUSE_GROUP, LINEAGE_GROUP, ORCHESTRATION_GROUP)
        - sensor_only
    )
    refresh_metadata = dg.define_asset_job(
        METADATA_JOB, selection=metadata, description="Re-snapshot dbt artifacts and warehouse schemas."
    )
    build_everything = dg.define_asset_job(
        EVERYTHING_JOB,
        selection=dg.AssetSelection.all() - sensor_only,
        description="Generate data, build dbt, snapshot all.",
    )
    resources: dict = {"store": StoreResource(root=settings.store_root, retention=settings.store.retention)}
    if settings.dbt is not None:
        resources["dbt"] = dbt_resource(settings)
    defs = dg.Definitions(
        assets=assets,
        jobs=[refresh_metadata, build_everything],
        schedules=[
            dg.ScheduleDefinition(
                name="metadata_refresh_schedule",
                job=refresh_metadata,
                cron_schedule=settings.schedules.metadata_cron,
                execution_timezone=settings.schedules.timezone,
                description="Keeps the store's dbt artifact and schema snapshots fresh for the MCP tools.",
                default_status=dg.DefaultScheduleStatus.RUNNING,
            )
        ],
        sensors=build_dbt_sensors(settings),
        resources=resources,
        # One step at a time: DuckDB allows a single writing process, and dbt, the loaders and the
        # schema snapshots all open the same file.
        executor=dg.in_process_executor,
    )
    # BI (issue 13): dashboard inventory and health per configured BI tool, after the dbt models they read.
    from ade_platform.defs.bi import build_bi_definitions

    bi_defs = build_bi_definitions(settings, upstream=model_keys)
    snowflake_defs = []
    if settings.snowflake is not None:
        from ade_platform.defs.snowflake import build_snowflake_definitions

        snowflake_defs.append(build_snowflake_definitions(settings))
    # dbt Cloud (issue 11): jobs, runs, freshness, artifacts and the failed-run sensor, when configured.
    dbt_cloud_defs = []
    if settings.dbt_cloud is not None:
        from ade_platform.defs.dbt_cloud import build_dbt_cloud_definitions

        dbt_cloud_defs.append(build_dbt_cloud_definitions(settings))
    merged = dg.Definitions.merge(
        defs,
        warehouse_defs,
        build_dataset_schedules(settings),
        bi_defs,
        build_orchestration_definitions(settings),
        *snowflake_defs,
        *dbt_cloud_defs,
    )
    # The cross-stack lineage joins whatever the other domains define, so it is built last, from their keys.
    defined = {
        key.to_user_string() for a in merged.assets or [] for key in (getattr(a, "keys", None) or [a.key])
    }
    # Live observations of the gateway's tools, shown on the assets they refine (issue 24).
    from ade_platform.defs.observations import build_observation_definitions

    return dg.Definitions.merge(
        merged, build_lineage_definitions(settings, defined), build_observation_definitions(settings, defined)
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(load_settings())
