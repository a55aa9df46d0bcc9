"""What a Dagster domain may read of the domains built before it.

Every domain exposes `defs(settings, inputs) -> dg.Definitions`; `ade_platform/definitions.py` builds the domains
in the order of its `DOMAINS` list and hands each one the `DomainInputs` of those before it. A domain that needs
nothing of the others ignores the argument; none reads another domain's module to find out what it defined.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg


@dataclass(frozen=True)
class DomainInputs:
    """The keys the domains built so far define.

    - `dbt_models`: the dbt project's models, seeds and snapshots (the dbt domain's `dbt_models` group): the
      warehouse schema snapshot and the BI inventories come after them, so one materialization of everything
      checks the warehouse and the dashboards dbt just built.
    - `defined`: every asset key defined so far, as user strings (`raw/orders`): the cross-stack lineage joins
      whichever of its inputs exist, and live observations land only on assets that exist.
    """

    dbt_models: tuple[dg.AssetKey, ...] = ()
    defined: frozenset[str] = frozenset()
