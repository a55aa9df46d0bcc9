"""The Dagster code location: one explicit Definitions merged from the domains, plus the jobs and schedule of the
whole platform.

Every domain is a package of `ade_platform/defs/` exposing `defs(settings, inputs) -> dg.Definitions` (empty when
its section is not configured). They are built in the order of `DOMAINS`; each gets the `DomainInputs` of those
before it (the dbt models the warehouse and BI assets come after, the asset keys the lineage joins).
Settings are read when Dagster loads the code location (the @definitions function), not at import.
"""

from __future__ import annotations

from collections.abc import Callable

import dagster as dg

from ade_platform.config import Settings, load_settings
from ade_platform.defs import (
    bi,
    datasets,
    dbt,
    dbt_cloud,
    incidents,
    lineage,
    observations,
    orchestrators,
    snowflake,
    warehouse,
)
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.schedules import refresh_job

METADATA_JOB = "refresh_metadata"
EVERYTHING_JOB = "build_everything"

# The order matters only where a domain reads what one before it defined (DomainInputs): the warehouse and BI
# assets come after the dbt models; the live observations and the lineage see every other domain's assets.
DOMAINS: tuple[Callable[[Settings, DomainInputs], dg.Definitions], ...] = (
    datasets.defs,
    dbt.defs,
    warehouse.defs,
    bi.defs,
    orchestrators.defs,
    snowflake.defs,
    dbt_cloud.defs,
    observations.defs,
    lineage.defs,
    incidents.defs,
)


def inputs_of(built: dg.Definitions) -> DomainInputs:
    """What the domains merged in `built` define, for the domains after them."""
    dbt_models: list[dg.AssetKey] = []
    defined: set[str] = set()
    for item in built.assets or []:
        if isinstance(item, dg.AssetsDefinition):
            groups = item.group_names_by_key
        else:  # an AssetSpec or a source asset
            groups = {item.key: getattr(item, "group_name", None)}
        for key, group in groups.items():
            defined.add(key.to_user_string())
            if group == dbt.MODELS_GROUP:
                dbt_models.append(key)
    return DomainInputs(dbt_models=tuple(dbt_models), defined=frozenset(defined))


def build_definitions(settings: Settings) -> dg.Definitions:
    if settings.dbt is not None and settings.dbt.warehouse:
        wh = settings.warehouse(settings.dbt.warehouse)
        if wh.type == "duckdb":
            # dbt creates the DuckDB file (its path reaches dbt through the dbt resource's environment).
            wh.path.parent.mkdir(parents=True, exist_ok=True)
    built = dg.Definitions()
    for domain in DOMAINS:
        built = dg.Definitions.merge(built, domain(settings, inputs_of(built)))
    return dg.Definitions.merge(built, platform_definitions(settings))


def platform_definitions(settings: Settings) -> dg.Definitions:
    """What belongs to no domain: the store resource, the executor, and the jobs and schedule across domains."""
    sensor_only = warehouse.sensor_evaluated_checks(settings)
    metadata = (
        dg.AssetSelection.groups(dbt.ARTIFACTS_GROUP, warehouse.GROUP, lineage.GROUP, orchestrators.GROUP)
        - sensor_only
    )
    refresh_metadata, schedules = refresh_job(
        settings, METADATA_JOB, metadata, settings.schedules.metadata_cron
    )
    build_everything = dg.define_asset_job(
        EVERYTHING_JOB,
        selection=dg.AssetSelection.all() - sensor_only,
        description="Generate data, build dbt, snapshot all.",
    )
    return dg.Definitions(
        jobs=[refresh_metadata, build_everything],
        schedules=schedules,
        resources={"store": StoreResource.from_settings(settings)},
        # One step at a time: DuckDB allows a single writing process, and dbt, the loaders and the
        # schema snapshots all open the same file.
        executor=dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(load_settings())
