"""The incidents sensor as Dagster loads it: registered with the demo's definitions, it refreshes the monitored
assets every interval (never two refreshes at once) and writes nothing when the store shows no graph yet."""

from __future__ import annotations

import dagster as dg
import pytest

from ade_platform.config import Settings
from ade_platform.definitions import build_definitions

pytestmark = [pytest.mark.integration]


def test_the_sensor_requests_the_monitored_refresh(tmp_settings: Settings) -> None:
    defs = build_definitions(tmp_settings)
    sensor = next(s for s in defs.sensors if s.name == "incidents_sensor")
    assert sensor.minimum_interval_seconds == tmp_settings.incidents.interval_seconds == 30
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    with dg.instance_for_test() as instance:
        result = sensor(dg.build_sensor_context(instance=instance, definitions=defs))
    (request,) = result.run_requests
    defined = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    # the BI tools are off without their emulators: only the monitored assets that are defined are refreshed
    monitored = set(tmp_settings.incidents.monitor_assets) & defined
    assert monitored and {k.to_user_string() for k in request.asset_selection} == monitored
    assert not result.asset_events  # no lineage graph in the store yet: nothing detected, nothing recorded
