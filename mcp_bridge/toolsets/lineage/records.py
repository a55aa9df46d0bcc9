"""The lineage toolset's view of the store: the graph and its adjacency index, health from the newest run-level
snapshots, the snapshot history (for onsets), observations, and the provenance of a joined answer.

Everything built from a snapshot is memoized on its version, so a warm call reads no JSON.
"""

from __future__ import annotations

import threading
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.dbt.artifacts import freeze_heap, gc_paused
from ade_platform.lib.lineage.evidence import Records
from ade_platform.lib.lineage.history import History
from ade_platform.lib.lineage.sources import (
    LINEAGE_ASSET,
    Topology,
    health_assets,
    health_inputs,
    store_read,
    table_columns,
)
from ade_platform.lib.lineage.store_records import StoreVersions, store_records
from ade_platform.lib.lineage.trace import Health, views
from ade_platform.store import SnapshotNotFound, StoreError
from ade_platform.store.observations import latest_observation
from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.dbt.inputs import derive


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
        columns = self.columns_now(lineage, version)
        return store_records(self.reader, self.history, self.topology, health, joined, columns)

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


def topology_of(settings: Settings) -> Topology:
    return Topology(
        warehouses={name: wh.type for name, wh in settings.warehouses.items()},
        dbt_warehouse=settings.dbt.warehouse if settings.dbt is not None else None,
    )
