"""Data profiles of warehouse relations and what changed between two of them (issue 33, items 2 and 4).

- `model`: `ColumnProfile`, `RelationProfile` (JSON-safe `as_state` / `from_state`), `Thresholds`.
- `sql`: `profile_queries`, one bounded aggregate query per relation (and one grouped query for value mixes) in
  DuckDB, Snowflake or BigQuery SQL, hostile names quoted or refused, protected columns counted only.
- `profile`: `profile_relation(run_sql, ...)`, through the caller's connection.
- `compare`: `compare(before, after, thresholds=...)` -> significant `ValueChange`s.
- `monitors`: thresholds learned from a relation's profile history, and the monitor verdicts.

Plain functions, no Dagster; the history lives in `ade_platform.store.profiles`.
"""

from ade_platform.lib.profiles.compare import ValueChange, compare
from ade_platform.lib.profiles.model import ColumnProfile, RelationProfile, Thresholds
from ade_platform.lib.profiles.profile import profile_relation
from ade_platform.lib.profiles.sql import profile_queries

__all__ = [
    "ColumnProfile",
    "RelationProfile",
    "Thresholds",
    "ValueChange",
    "compare",
    "profile_queries",
    "profile_relation",
]
