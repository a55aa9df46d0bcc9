"""What an asset whose output is a snapshot in the store tells Dagster: the snapshot's store version in the asset's
metadata, and the store's data version (the same data publishes the same data version, so Dagster sees an
unchanged snapshot as unchanged)."""

from collections.abc import Mapping
from typing import Any

import dagster as dg

from ade_platform.store import Provenance


def stored_result(
    prov: Provenance, metadata: Mapping[str, Any] | None = None, **result: Any
) -> dg.MaterializeResult:
    """The MaterializeResult of an asset that published `prov`; `result` adds check results and the like."""
    return dg.MaterializeResult(
        metadata={**(metadata or {}), "store_version": prov.version},
        data_version=dg.DataVersion(prov.data_version or prov.version),
        **result,
    )
