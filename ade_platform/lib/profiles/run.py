"""One profile run over a warehouse: every target profiled within the run's bounds, each profile recorded and
judged by the monitors against the relation's history. A relation that fails (a timeout, a name it cannot quote,
a table dropped since the snapshot) is skipped and said; the run goes on.

Dagster-free: the caller passes how to query (`run_sql`), how to read a relation's history and how to record a
profile (the store, in the Dagster asset).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ade_platform.lib.errors import CodedError
from ade_platform.lib.profiles.model import RelationProfile
from ade_platform.lib.profiles.monitors import MONITORS, evaluate
from ade_platform.lib.profiles.profile import RunSql, profile_relation
from ade_platform.lib.profiles.sql import UnsafeName, relation_name
from ade_platform.lib.profiles.targets import Target

# A DuckDB client keeps the file attached this long between a run's queries (attaching is most of a small
# relation's cost); a writer that asks for the file still gets it at once (the client's lease yields).
DUCKDB_HOLD_SECONDS = 2.0
MAX_LISTED = 200  # relations listed per monitor and skipped in the summary (counts are always whole)


def profile_all(
    run_sql: RunSql,
    dialect: str,
    warehouse: str,
    targets: Sequence[Target],
    *,
    history: Callable[[str], list[RelationProfile]],
    record: Callable[[RelationProfile], Any],
    max_relations: int,
    budget_seconds: float,
    mix_bound: int = 20,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """The run's summary: relations profiled and skipped (with why), and per monitor the failing relations."""
    started = clock()
    profiled: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    failing: dict[str, list[dict[str, Any]]] = {m: [] for m in MONITORS}
    query_ms = 0.0
    for i, target in enumerate(targets):
        name = relation_name(target.parts)
        if i >= max_relations:
            skipped.append({"relation": name, "reason": f"past max_relations ({max_relations})"})
            continue
        if clock() - started > budget_seconds:
            skipped.append({"relation": name, "reason": f"the run's budget ({budget_seconds:g} s) was spent"})
            continue
        try:
            profile = profile_relation(
                run_sql,
                dialect,
                warehouse,
                target.parts,
                target.columns,
                unique_keys=target.unique_keys,
                protected=target.protected,
                mix_bound=mix_bound,
            )
        except (CodedError, UnsafeName) as exc:
            reason = f"{exc.code}: {exc.detail}" if isinstance(exc, CodedError) else str(exc)
            skipped.append({"relation": name, "reason": reason})
            continue
        query_ms += profile.elapsed_ms
        past = history(profile.relation)
        record(profile)
        results = evaluate(past, profile)
        for result in results:
            if not result.passed:
                failing[result.monitor].append(
                    {
                        "relation": profile.relation,
                        "node": target.unique_id,
                        "detail": result.detail,
                        **result.metadata,
                    }
                )
        profiled.append(
            {
                "relation": profile.relation,
                "node": target.unique_id,
                "rows": profile.row_count,
                "elapsed_ms": profile.elapsed_ms,
                "history": len(past),
                "failing": [r.monitor for r in results if not r.passed],
            }
        )
    return {
        "warehouse": warehouse,
        "targets": len(targets),
        "profiled": len(profiled),
        "skipped": len(skipped),
        "elapsed_ms": round((clock() - started) * 1000, 1),
        "query_ms": round(query_ms, 1),
        "relations": profiled[:MAX_LISTED],
        "skipped_relations": skipped[:MAX_LISTED],
        "failing": {m: rows[:MAX_LISTED] for m, rows in failing.items()},
        "failing_counts": {m: len(rows) for m, rows in failing.items()},
    }
