"""Relation profiles, historized per relation in the asset store (on the observation store, kind
`relation_profile`, key `<warehouse>:<db>.<schema>.<name>`).

History is what the monitors learn from (five weeks of daily points at least, for day-of-week seasonality) and
what an explanation compares with (the profile of the last healthy build). So each relation keeps every profile
of its last `RECENT_DAYS`, then the newest profile of each UTC day back to `RETAIN_DAYS`, and never more than
`MAX_PER_RELATION` in all: bounded whatever the build cadence, and a read of one relation's history is one folder
listing and at most that many small files. No Dagster import here.
"""

from __future__ import annotations

from collections.abc import Sequence

from ade_platform.lib.profiles.model import RelationProfile
from ade_platform.store.observations import (
    latest_observation,
    latest_observations,
    observation_history,
    record_observation,
    table_key,
    thin_observations,
)
from ade_platform.store.reader import StoreReader
from ade_platform.store.writer import StoreWriter

KIND = "relation_profile"
RECENT_DAYS = 3
RETAIN_DAYS = 70  # ten weeks of daily points: seasonality needs three, the monitors' learning window five
MAX_PER_RELATION = 400
_DAY = 86_400.0


def profile_key(warehouse: str, relation: str) -> str:
    """`<warehouse>:<db>.<schema>.<name>`, lower case (the observation store's table key, the database kept)."""
    schema, _, name = relation.rpartition(".")
    return table_key(warehouse, schema, name) if schema else f"{warehouse}:{relation}".lower()


def kept_indexes(times: Sequence[float], *, now: float | None = None) -> set[int]:
    """Which of a relation's profiles (observed times, oldest first) to keep: all of the last RECENT_DAYS, the
    newest of each older UTC day within RETAIN_DAYS, at most MAX_PER_RELATION (the newest)."""
    if not times:
        return set()
    newest = max(times) if now is None else now
    keep: set[int] = set()
    newest_of_day: dict[int, int] = {}
    for i, moment in enumerate(times):
        age = newest - moment
        if age <= RECENT_DAYS * _DAY:
            keep.add(i)
        elif age <= RETAIN_DAYS * _DAY:
            day = int(moment // _DAY)
            if day not in newest_of_day or times[newest_of_day[day]] <= moment:
                newest_of_day[day] = i
    keep |= set(newest_of_day.values())
    return set(sorted(keep, key=lambda i: times[i])[-MAX_PER_RELATION:])


def record_profile(
    writer: StoreWriter, profile: RelationProfile, source: str, asset: str | None = None
) -> bool:
    """Keep one profile in its relation's history (thinned to the bounds above)."""
    key = profile_key(profile.warehouse, profile.relation)
    written = record_observation(
        writer,
        KIND,
        key,
        profile.as_state(),
        source=source,
        observed_at=profile.profiled_at,
        asset=asset,
        max_per_key=MAX_PER_RELATION,
    )
    if written:
        thin_observations(writer, KIND, key, kept_indexes)
    return written


def profile_history(
    reader: StoreReader, warehouse: str, relation: str, since: float | None = None
) -> list[RelationProfile]:
    """A relation's kept profiles, oldest first (those profiled at or after `since`)."""
    key = profile_key(warehouse, relation)
    return [RelationProfile.from_state(o.state) for o in observation_history(reader, KIND, key, since)]


def latest_profile(reader: StoreReader, warehouse: str, relation: str) -> RelationProfile | None:
    found = latest_observation(reader, KIND, profile_key(warehouse, relation))
    return RelationProfile.from_state(found.state) if found is not None else None


def latest_profiles(reader: StoreReader, warehouse: str | None = None) -> list[RelationProfile]:
    """The newest profile of every relation (of one warehouse), oldest first: one read per relation."""
    found = latest_observations(reader, KIND, prefix=f"{warehouse.lower()}:" if warehouse else None)
    return [RelationProfile.from_state(o.state) for o in found]
