"""The value probes of the lineage join: each relation on the chain profiled live (one bounded query,
lib/profiles/profile.py) and compared with its baseline profile from the store, closest to the start first, within
the same budget and the same audited read-only run as the other probes. What they read is recorded as profiles
(store/profiles.py) after the answer is built, so the next answer and the monitors start from it.

The baseline is the newest stored profile before now that a lineage tool did not record itself (what an incident
call read is the incident, not a healthy state), or with `since` the one at or just before it. A relation with no
stored profile is not probed: there is nothing to compare it with.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.lineage.budget import Probe
from ade_platform.lib.lineage.gather_values import Compared, RelationHop, relation_hops
from ade_platform.lib.lineage.trace import Walk

log = logging.getLogger(__name__)
LINEAGE_SOURCES = frozenset({"lineage_explain_incident", "lineage_what_changed"})
_MAX_PROFILE_ROWS = (
    20_000  # a profile query's rows (one per column and per value of a low-cardinality column)
)
# how far back a baseline is looked for behind the profiles lineage calls recorded (the store keeps every profile
# of the last three days, store/profiles.py)
_LOOKBACK_S = 2 * 86_400.0


class ValueProbes:
    def __init__(self, settings: Settings, warehouse: Callable[[str], Any]):
        self.settings = settings
        self._warehouse = warehouse

    def plan(self, v: dict[str, Any], chain: Walk, since: float | None = None) -> list[Probe]:
        """One probe per relation of the chain that has a baseline profile, closest first."""
        from ade_platform.store import StoreReader

        reader = StoreReader(self.settings.store_root)
        probes = []
        now = time.time()
        for hop in relation_hops(v, chain):
            if hop.warehouse not in self.settings.warehouses:
                continue
            base = baseline(reader, hop, since, now)
            if base is None:
                continue
            probes.append(
                Probe(
                    f"profile:{hop.node}",
                    "profile",
                    hop.node,
                    hop.depth,
                    self._runner(hop, base),
                    facts={"relation": hop.relation, "warehouse": hop.warehouse},
                )
            )
        return probes

    def _runner(self, hop: RelationHop, base: Any) -> Callable[[], Compared]:
        def run() -> Compared:
            from ade_platform.lib.profiles.compare import compare
            from ade_platform.lib.profiles.profile import profile_relation

            wh = self.settings.warehouses[hop.warehouse]
            client = self._warehouse(hop.warehouse)

            def run_sql(sql: str) -> list[tuple]:
                return [tuple(row.values()) for row in client.query(sql, max_rows=_MAX_PROFILE_ROWS).rows]

            # the same measures as the baseline: its columns, its unique keys, its protected columns
            parts = hop.relation.split(".")
            if wh.type == "duckdb" and len(parts) == 3:
                parts = parts[
                    1:
                ]  # DuckDB's catalog is a file name the platform and dbt may spell differently
            now = profile_relation(
                run_sql,
                wh.type,
                hop.warehouse,
                parts,
                [(name, col.type) for name, col in base.columns.items()],
                unique_keys=tuple(tuple(k.split(",")) for k in base.duplicates),
                protected=tuple(n for n, col in base.columns.items() if col.protected),
            )
            now = replace(now, relation=hop.relation)  # keyed as the graph and the baseline key it
            return Compared(hop, base.profiled_at, now.profiled_at, compare(base, now), now)

        return run


def baseline(reader: Any, hop: RelationHop, since: float | None, now: float) -> Any:
    """The profile a relation's values now are compared with (None: never profiled). One read when the newest
    stored profile is a healthy one; the recent history only when a lineage call recorded the newest."""
    from ade_platform.lib.profiles.model import RelationProfile
    from ade_platform.store.observations import latest_observation, observation_history
    from ade_platform.store.profiles import KIND, profile_key

    key = profile_key(hop.warehouse, hop.relation)
    if since is None:
        newest = latest_observation(reader, KIND, key)
        if newest is None or newest.source not in LINEAGE_SOURCES:
            return RelationProfile.from_state(newest.state) if newest is not None else None
        history = observation_history(reader, KIND, key, now - _LOOKBACK_S)
        kept = [o for o in history if o.source not in LINEAGE_SOURCES and o.observed_at < now]
        return RelationProfile.from_state((kept or [newest])[-1].state)
    history = observation_history(reader, KIND, key, since - _LOOKBACK_S)
    if not history:
        return None
    before = [o for o in history if o.observed_at <= since]
    return RelationProfile.from_state((before[-1] if before else history[0]).state)
