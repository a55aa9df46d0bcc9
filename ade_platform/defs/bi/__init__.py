"""bi: per configured BI tool (Looker, Metabase), the dashboard inventory (dashboards, tiles, the warehouse tables
each tile reads) and the dashboard health (every tile run once, with asset checks on broken and empty tiles), a
job and schedule that refresh both, and a sensor that notices a dashboard turning to error. Both assets come
after the dbt models (`inputs.dbt_models`). Empty when no BI tool is configured."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.bi.assets import (
    BROKEN_CHECK,
    EMPTY_CHECK,
    GROUP,
    health_asset_def,
    inventory_asset_def,
)
from ade_platform.defs.bi.sensors import dashboard_error_sensor
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.schedules import refresh_job
from ade_platform.lib.bi.names import health_asset, inventory_asset

__all__ = ["BROKEN_CHECK", "EMPTY_CHECK", "GROUP", "REFRESH_JOB", "defs"]

REFRESH_JOB = "refresh_bi"


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    tools = settings.bi.tools
    if not tools:
        return dg.Definitions()
    upstream = list(inputs.dbt_models)
    assets: list = []
    for tool in tools:
        assets += [inventory_asset_def(tool, settings, upstream), health_asset_def(tool, settings)]
    selection = dg.AssetSelection.assets(
        *[dg.AssetKey(n(t)) for t in tools for n in (inventory_asset, health_asset)]
    )
    refresh, schedules = refresh_job(settings, REFRESH_JOB, selection, settings.schedules.metadata_cron)
    return dg.Definitions(
        assets=assets,
        jobs=[refresh],
        schedules=schedules,
        sensors=[dashboard_error_sensor(settings, refresh)],
    )
