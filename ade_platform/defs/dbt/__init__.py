"""dbt: the project's models via dagster-dbt (tests become asset checks), the artifact snapshots (manifest,
catalog, run results, source freshness) with the lineage index and select-star report, the `dbt` resource, and a
sensor that publishes what dbt runs outside ADE write into the target folder. Empty without a `dbt:` section."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.dbt.assets import ARTIFACTS_GROUP, MODELS_GROUP, build_dbt_assets
from ade_platform.defs.dbt.resources import dbt_resource
from ade_platform.defs.dbt.sensors import publish_external_artifacts, target_folder_sensor
from ade_platform.defs.inputs import DomainInputs

__all__ = ["ARTIFACTS_GROUP", "MODELS_GROUP", "defs", "publish_external_artifacts"]


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    if settings.dbt is None:
        return dg.Definitions()
    return dg.Definitions(
        assets=build_dbt_assets(settings),
        sensors=[target_folder_sensor(settings)],
        resources={"dbt": dbt_resource(settings)},
    )
