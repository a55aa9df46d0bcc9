"""Profile one relation through the caller's connection: the aggregate query, then the mix query for the columns
whose distinct count is within the bound. `run_sql(sql) -> list[tuple]` is whatever the caller reads with (a
DuckDB connection in the tests, a warehouse client in the Dagster asset); its timeouts are the caller's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from ade_platform.lib.profiles.model import ColumnProfile, RelationProfile, as_number, json_value
from ade_platform.lib.profiles.sql import ProfileQueries, key_name, profile_queries, relation_name

RunSql = Callable[[str], Sequence[Sequence[Any]]]


def _int(value: Any) -> int:
    return int(value) if value is not None else 0


def _mixes(
    queries: ProfileQueries, rows: Iterable[Sequence[Any]], wanted: Sequence[str]
) -> dict[str, list[tuple[str, int]] | None]:
    """column -> [(value as text, rows)], most frequent first, or None when its exact distinct count is past the
    bound (the approximate one said it was within); NULL is not a value (nulls are counted apart)."""
    wanted = [c for c in queries.mixable if c in set(wanted)]
    found: dict[str, list[tuple[str, int]]] = {c: [] for c in wanted}
    width = len(wanted)
    for row in rows:
        flags, values, count = row[:width], row[width : 2 * width], row[2 * width]
        for i, flag in enumerate(flags):
            if not flag and values[i] is not None:  # GROUPING(col) = 0: this row counts col's values
                found[wanted[i]].append((str(json_value(values[i])), _int(count)))
                break
    mixes: dict[str, list[tuple[str, int]] | None] = {}
    for column, values in found.items():
        values.sort(key=lambda vc: (-vc[1], vc[0]))
        mixes[column] = values if len(values) <= queries.mix_bound else None
    return mixes


def profile_relation(
    run_sql: RunSql,
    dialect: str,
    warehouse: str,
    relation: str | Sequence[str],
    columns: Sequence[tuple[str, str]],
    *,
    unique_keys: Iterable[str | Sequence[str]] = (),
    protected: Collection[str] = (),
    mix_bound: int = 20,
) -> RelationProfile:
    """One relation's profile. Raises whatever `run_sql` raises (a timeout is the caller's to skip and say)."""
    started = time.perf_counter()
    queries = profile_queries(
        dialect, relation, columns, unique_keys=unique_keys, protected=protected, mix_bound=mix_bound
    )
    result = list(run_sql(queries.aggregate))
    row = result[0] if result else [None] * len(queries.outputs)
    metrics: dict[tuple[str | None, str], Any] = dict(zip(queries.outputs, row, strict=True))
    rows = _int(metrics[(None, "rows")])
    # HyperLogLog errs by a few percent: ask the mix of columns a little past the bound; `_mixes` keeps the
    # columns whose exact count is within it
    low = [
        name
        for name in queries.mixable
        if metrics.get((name, "distinct")) is not None
        and _int(metrics[(name, "distinct")]) <= mix_bound * 1.1 + 1
    ]
    mix_sql = queries.mix(low) if rows else None
    mixes = _mixes(queries, run_sql(mix_sql), low) if mix_sql else {}
    profiled: dict[str, ColumnProfile] = {}
    for name, raw_type in queries.columns:
        safe = name not in queries.protected
        distinct = metrics.get((name, "distinct"))
        top = mixes.get(name) if safe else None
        if top is not None:
            distinct = len(top)  # exact: the mix counted every value
        profiled[name] = ColumnProfile(
            name=name,
            type=raw_type,
            nulls=rows - _int(metrics.get((name, "non_null"))),
            distinct=None if distinct is None else _int(distinct),
            min=json_value(metrics.get((name, "min"))) if safe else None,
            max=json_value(metrics.get((name, "max"))) if safe else None,
            sum=as_number(json_value(metrics.get((name, "sum")))) if safe else None,
            top=tuple(top) if top is not None else None,
            protected=not safe,
        )
    duplicates = {key_name(k): _int(metrics[(None, f"dup:{key_name(k)}")]) for k in queries.unique_keys}
    return RelationProfile(
        warehouse=warehouse,
        relation=relation_name(relation),
        row_count=rows,
        columns=profiled,
        duplicates=duplicates,
        profiled_at=time.time(),
        elapsed_ms=round((time.perf_counter() - started) * 1000.0, 3),
        skipped_columns=queries.skipped_columns,
    )
