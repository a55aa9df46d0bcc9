"""incidents: detection of incidents from the store (one sensor) and the `incidents` asset whose observations
show each open incident and its chain in the Dagster UI. Off with `incidents.enabled: false`."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.incidents.sensors import INCIDENTS_ASSET, build_incident_definitions, incident_tick
from ade_platform.defs.inputs import DomainInputs

__all__ = ["INCIDENTS_ASSET", "defs", "incident_tick"]


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    if not settings.incidents.enabled:
        return dg.Definitions()
    return build_incident_definitions(settings, set(inputs.defined))
