"""The dbt resource: dagster-dbt's CLI resource over the configured project, run with this environment's dbt."""

from dagster_dbt import DbtCliResource

from ade_platform.config import Settings
from ade_platform.defs.dbt.assets import dbt_executable


def dbt_resource(settings: Settings) -> DbtCliResource:
    assert settings.dbt is not None
    return DbtCliResource(
        project_dir=str(settings.dbt.project_dir),
        profiles_dir=str(settings.dbt.profiles_dir) if settings.dbt.profiles_dir else None,
        target=settings.dbt.target,
        dbt_executable=dbt_executable(),
    )
