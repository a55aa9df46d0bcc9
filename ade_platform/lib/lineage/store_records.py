"""The snapshot side of an incident, read from a store: retained versions (for onsets), the newest versions, the
warehouses' schema histories and the observations. Shared by the gateway's lineage tools and incident detection
(which runs in Dagster, so it cannot use the gateway's view)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from ade_platform.lib.lineage.conditions import epoch_of
from ade_platform.lib.lineage.evidence import Records
from ade_platform.lib.lineage.history import History, VersionRef
from ade_platform.lib.lineage.sources import Topology
from ade_platform.lib.lineage.tables import SchemaHistory
from ade_platform.lib.lineage.trace import Health
from ade_platform.lib.warehouse.names import schema_asset
from ade_platform.store import SnapshotNotFound, StoreReader
from ade_platform.store.observations import observation_history


class StoreVersions:
    """History's view of the store: retained versions newest first (re-listed only when the pointer moves)."""

    def __init__(self, reader: StoreReader):
        self.reader = reader
        self._lists: dict[str, tuple[str, list[VersionRef]]] = {}
        self._lock = threading.Lock()

    def versions(self, asset: str) -> list[VersionRef]:
        try:
            latest = self.reader.latest(asset)
        except SnapshotNotFound:
            return []
        with self._lock:
            cached = self._lists.get(asset)
        if cached is not None and cached[0] == latest.version:
            return cached[1]
        refs = [
            VersionRef(p.version, happened_at(p), p.data_version)
            for p in reversed(self.reader.history(asset))
            if p.version <= latest.version  # versions sort in publication order
        ]
        with self._lock:
            self._lists[asset] = (latest.version, refs)
        return refs

    def load(self, asset: str, version: str) -> Any:
        latest = self.reader.latest(asset)
        if latest.version == version:
            return latest.data
        return self.reader.get(asset, version).data


def happened_at(provenance: Any) -> float:
    """When a version's content happened: the dbt invocation that wrote an artifact (its generated_at: a run
    outside ADE may be published long after it ran), else when the version was materialized."""
    generated = epoch_of((provenance.source or {}).get("generated_at"))
    return generated if generated is not None else provenance.materialized_epoch


def store_records(
    reader: StoreReader,
    history: History,
    topology: Topology,
    health: Health,
    joined: Iterable[str],
    table_columns: dict[str, set[str]],
) -> Records:
    """Records over `reader`: the newest version of every joined health asset and warehouse schema."""
    newest: dict[str, VersionRef] = {}
    for asset in [*joined, *(schema_asset(w) for w in topology.warehouses)]:
        refs = history.versions(asset)
        if refs:
            newest[asset] = refs[0]
    schemas = {
        name: SchemaHistory(history, schema_asset(name), wh_type)
        for name, wh_type in topology.warehouses.items()
    }

    def observations(kind: str, key: str) -> list[Any]:
        return observation_history(reader, kind, key)

    return Records(
        health=health,
        history=history,
        newest=newest,
        schemas=schemas,
        table_columns=table_columns,
        observations=observations,
    )
