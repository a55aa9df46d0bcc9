"""datasets: each Snowfakery recipe in `datasets.recipes_dir` as a multi-asset of the tables it writes into the
(DuckDB) warehouse, the job that regenerates them all, and its schedule when `datasets.schedule_cron` is set.
Empty without a `datasets:` section, for a warehouse other than DuckDB, or without recipes."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.datasets.assets import GROUP, build_dataset_assets
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.schedules import refresh_job

__all__ = ["GROUP", "JOB", "defs"]

JOB = "generate_datasets"


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    assets = build_dataset_assets(settings)
    cfg = settings.datasets
    if cfg is None or not assets:
        return dg.Definitions(assets=assets)
    job, schedules = refresh_job(settings, JOB, dg.AssetSelection.groups(GROUP), cfg.schedule_cron)
    return dg.Definitions(assets=assets, jobs=[job], schedules=schedules)
