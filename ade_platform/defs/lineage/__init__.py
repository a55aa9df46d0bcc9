"""lineage: the cross-stack lineage asset (BI tiles → warehouse tables → dbt nodes → sources, and the jobs that
build each) over whichever of its inputs the domains before it define (`inputs.defined`), rebuilt by its own
automation sensor whenever one of them is re-materialized."""

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.inputs import DomainInputs
from ade_platform.defs.lineage.assets import GROUP, build_lineage_definitions

__all__ = ["GROUP", "defs"]


def defs(settings: Settings, inputs: DomainInputs) -> dg.Definitions:
    return build_lineage_definitions(settings, set(inputs.defined))
