"""orchestrators: per reachable backend (Dagster always; Airflow and Prefect when `orchestrators:` configures
them), the run history of the tracked DAGs as an asset, and a sensor that refreshes it when a run fails."""

import dagster as dg

from ade_platform.clients.orchestrators import configured_backends
from ade_platform.config import Settings
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.orchestrators.assets import GROUP, asset_name, run_history_asset
from ade_platform.defs.orchestrators.sensors import failed_run_sensor

__all__ = ["GROUP", "asset_name", "defs"]


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    backends = configured_backends(settings)
    return dg.Definitions(
        assets=[run_history_asset(settings, b) for b in backends],
        sensors=[failed_run_sensor(settings, b) for b in backends],
    )
