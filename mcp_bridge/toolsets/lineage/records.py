"""The lineage toolset's view of the store: the graph and its adjacency index, health from the newest run-level
snapshots, the snapshot history (for onsets), observations, and the provenance of a joined answer.

Everything built from a snapshot is memoized on its version, so a warm call reads no JSON.
"""

from __future__ import annotations

import threading
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.dbt.artifacts import freeze_heap, gc_paused
from ade_platform.lib.lineage.conditions import epoch_of
from ade_platform.lib.lineage.evidence import Records
from ade_platform.lib.lineage.history import History, VersionRef
from ade_platform.lib.lineage.sources import (
    LINEAGE_ASSET,
    Topology,
    health_assets,
    health_inputs,
    store_read,
    table_columns,
)
from ade_platform.lib.lineage.tables import SchemaHistory
from ade_platform.lib.lineage.trace import Health, views
from ade_platform.lib.warehouse.names import schema_asset
from ade_platform.store import SnapshotNotFound, StoreError, StoreReader
from ade_platform.store.observations import latest_observation, observation_history
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt.inputs import derive


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
            VersionRef(p.version, _happened_at(p), p.data_version)
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


class LineageStore:
    def __init__(self, ctx: BridgeContext, topology: Topology):
        self.ctx = ctx
        self.reader = ctx.reader
        self.topology = topology
        self.history = History(StoreVersions(ctx.reader))
        self.read = store_read(ctx.reader)
        self._memo: dict[tuple[str, Any], Any] = {}
        self._lock = threading.Lock()

    def graph(self) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """The graph snapshot, its data and its adjacency index; parsed and indexed once per version, with the
        collector paused (a 10k-node project's graph parses in a third of the time)."""
        snapshot = self.reader.latest(LINEAGE_ASSET)
        v = derive(snapshot, "lineage_views", lambda s: views(s.data))
        return snapshot, snapshot.data, v

    def _memoized(self, key: tuple[str, Any], build: Any) -> Any:
        with self._lock:
            if key in self._memo:
                return self._memo[key]
        with gc_paused():
            value = build()
        freeze_heap()
        with self._lock:
            if len(self._memo) > 16:
                self._memo.clear()
            self._memo[key] = value
        return value

    def health_now(self) -> tuple[Health, dict[str, str]]:
        """Health from the newest run-level snapshots, indexed once per set of versions (a new run moves one)."""
        versions = {}
        for asset in health_assets(self.topology):
            try:
                versions[asset] = self.reader.latest(asset).version
            except SnapshotNotFound:
                continue
        key = ("health", tuple(sorted(versions.items())))
        return self._memoized(key, lambda: Health(health_inputs(self.read, self.topology)[0])), versions

    def columns_now(self, lineage: dict[str, Any], version: str) -> dict[str, set[str]]:
        return self._memoized(("columns", version), lambda: table_columns(self.read, self.topology, lineage))

    def records(
        self, health: Health, joined: dict[str, str], lineage: dict[str, Any], version: str
    ) -> Records:
        newest: dict[str, VersionRef] = {}
        for asset in [*joined, *(schema_asset(w) for w in self.topology.warehouses)]:
            refs = self.history.versions(asset)
            if refs:
                newest[asset] = refs[0]
        schemas = {
            name: SchemaHistory(self.history, schema_asset(name), wh_type)
            for name, wh_type in self.topology.warehouses.items()
        }
        reader = self.reader

        def observations(kind: str, key: str) -> list[Any]:
            return observation_history(reader, kind, key)

        return Records(
            health=health,
            history=self.history,
            newest=newest,
            schemas=schemas,
            table_columns=self.columns_now(lineage, version),
            observations=observations,
        )

    def latest_observation(self, kind: str, key: str) -> Any:
        return latest_observation(self.reader, kind, key)

    def provenance(
        self,
        snapshot: Any,
        lineage: dict[str, Any],
        joined: dict[str, str],
        *,
        read_live: frozenset[str] = frozenset(),
    ) -> dict[str, Any]:
        """The graph's provenance, every joined snapshot, and `stale` when an input the answer used is known to
        be superseded (a newer graph input, a dbt run not yet published) and the live probes did not read it."""
        reasons = []
        moved = []
        for asset, version in (lineage.get("inputs") or {}).items():
            try:  # a folder listing: loading each input's newest snapshot (a manifest) would cost more
                newest = max(self.reader.versions(asset), default=None)
            except (StoreError, OSError):
                continue
            if newest is not None and newest > version:
                moved.append(asset)
        if moved:
            reasons.append(
                f"newer versions of {', '.join(sorted(moved))} exist than the graph was built from"
            )
        stamped = self.ctx.cached_answer(snapshot, {}, stale_reason="; ".join(reasons) or None)["provenance"]
        stamped["joined"] = []
        detector = self.ctx.staleness()
        for asset in sorted(joined):
            prov = self.reader.provenance(asset, joined[asset])
            p = prov.stamp()
            stamped["joined"].append(
                {k: p[k] for k in ("asset", "version", "materialized_at", "age_seconds")}
            )
            reason = None if asset in read_live else detector.stale_reason(prov)
            if reason:
                reasons.append(f"{asset}: {reason}")
        if reasons:
            stamped["stale"] = True
            stamped["stale_reason"] = "; ".join(reasons)
        return stamped


def _happened_at(provenance: Any) -> float:
    """When a version's content happened: the dbt invocation that wrote an artifact (its generated_at: a run
    outside ADE may be published long after it ran), else when the version was materialized."""
    generated = epoch_of((provenance.source or {}).get("generated_at"))
    return generated if generated is not None else provenance.materialized_epoch


def topology_of(settings: Settings) -> Topology:
    return Topology(
        warehouses={name: wh.type for name, wh in settings.warehouses.items()},
        dbt_warehouse=settings.dbt.warehouse if settings.dbt is not None else None,
    )
