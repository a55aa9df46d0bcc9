"""observations: what the gateway's live tools saw, recorded as asset observations on the assets the domains
before it define (`inputs.defined`) by one sensor."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.observations.sensors import build_observation_definitions, observation_events

__all__ = ["defs", "observation_events"]


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    return build_observation_definitions(settings, set(inputs.defined))
