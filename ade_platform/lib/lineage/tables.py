"""What changed in a warehouse table: the table now (read live, or the newest schema snapshot) against the
newest snapshot that looked different, dated from the schema snapshot history.

The comparison reuses the drift report (lib/warehouse/drift.py): the older table plays the declared side, so
removed, retyped and likely renamed columns come out exactly as `warehouse_detect_schema_drift` names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ade_platform.lib.lineage.conditions import (
    Condition,
    Onset,
    cache_source,
    condition_on,
    live_source,
    short_relation,
    table_changes,
)
from ade_platform.lib.lineage.history import History, VersionRef
from ade_platform.lib.lineage.relations import make_key
from ade_platform.lib.warehouse import drift
from ade_platform.lib.warehouse.manifest import DeclaredColumn, Relation
from ade_platform.lib.warehouse.types import normalize_type

Fingerprint = tuple[tuple[str, str | None], ...]


def table_key(table: dict[str, Any], warehouse_type: str | None) -> str:
    return make_key(
        table.get("database"), table.get("schema"), table.get("name") or "", warehouse_type
    ).dotted


def fingerprint(table: dict[str, Any] | None, warehouse_type: str) -> Fingerprint | None:
    """Columns (lower-cased name, normalized type) in position order; None for a missing table."""
    if table is None:
        return None
    cols = sorted(table.get("columns") or [], key=lambda c: c.get("position") or 0)
    return tuple((str(c.get("name")).lower(), normalize_type(c.get("type"), warehouse_type)) for c in cols)


def tables_by_key(data: dict[str, Any], warehouse_type: str | None) -> dict[str, dict[str, Any]]:
    return {table_key(t, warehouse_type): t for t in (data or {}).get("tables") or []}


def compare(old: dict[str, Any], new: dict[str, Any] | None, warehouse_type: str) -> dict[str, Any]:
    """The drift report of `new` against `old` as if old were what dbt declares."""
    columns = tuple(
        DeclaredColumn(
            name=str(c.get("name")), data_type=c.get("type"), type_source="snapshot", index=c.get("position")
        )
        for c in sorted(old.get("columns") or [], key=lambda c: c.get("position") or 0)
    )
    relation = Relation(
        unique_id=table_key(old, warehouse_type),
        name=str(old.get("name")),
        resource_type="table",
        package=None,
        database=old.get("database"),
        schema=str(old.get("schema")),
        identifier=str(old.get("name")),
        tags=(),
        columns=columns,
        columns_source="snapshot",
    )
    return drift.compare(relation, new, warehouse_type)


@dataclass
class TableState:
    """A table as it is now, and where that came from."""

    key: str  # make_key(...).dotted
    table: dict[str, Any] | None  # None: not there
    live_at: float | None  # when read live (None: from the newest snapshot)


class SchemaHistory:
    """Schema snapshot versions of one warehouse, reduced per version to a fingerprint per table."""

    def __init__(self, history: History, asset: str, warehouse_type: str):
        self.history = history
        self.asset = asset
        self.warehouse_type = warehouse_type

    def _fingerprints(self, data: Any) -> dict[str, Fingerprint | None]:
        return {
            key: fingerprint(t, self.warehouse_type)
            for key, t in tables_by_key(data, self.warehouse_type).items()
        }

    def fingerprints(self, ref: VersionRef) -> dict[str, Fingerprint | None]:
        return self.history.reduce(self.asset, ref, "fingerprints", self._fingerprints)

    def table_at(self, ref: VersionRef, key: str) -> dict[str, Any] | None:
        return self.history.reduce(
            self.asset, ref, f"table:{key}", lambda data: tables_by_key(data, self.warehouse_type).get(key)
        )

    def newest(self) -> VersionRef | None:
        refs = self.history.versions(self.asset)
        return refs[0] if refs else None


def table_change(
    node: str,
    depth: int,
    state: TableState,
    schemas: SchemaHistory,
    now: float,
    observed: list[tuple[float, dict[str, Any] | None]] = (),  # type: ignore[assignment]
) -> Condition | None:
    """The breaking change of one table since the newest snapshot that looked different (None: none seen).

    `observed`: the table as live tools saw it since that snapshot (time, table or None), oldest first: a change
    another agent already saw is dated from its first observation.
    """
    wh_type = schemas.warehouse_type
    newest = schemas.newest()
    if newest is None:
        return None
    current = fingerprint(state.table, wh_type)
    newest_fp = schemas.fingerprints(newest).get(state.key)
    if state.live_at is not None and current != newest_fp:
        before: VersionRef | None = newest
        first, after, origin = state.live_at, newest.at, "live"
        for at, table in reversed([o for o in observed if newest.at < o[0] < state.live_at]):
            if fingerprint(table, wh_type) != current:
                after = at
                break
            first, origin = at, "observation"
        onset = Onset(at=first, after=after, origin=origin)
        source = live_source(state.live_at)
    else:
        streak = schemas.history.streak(
            schemas.asset,
            "fingerprints",
            schemas._fingerprints,
            lambda fps: fps.get(state.key) == current,
        )
        before = streak.before
        if before is None or streak.since is None:
            return None
        onset = Onset(at=streak.since.at, after=before.at, origin=schemas.asset)
        source = (
            live_source(state.live_at)
            if state.live_at is not None
            else cache_source(schemas.asset, newest.version, newest.at, now)
        )
    old = schemas.table_at(before, state.key)
    if old is None:
        return None  # the table is new: nothing that used it can have broken
    report = compare(old, state.table, wh_type)
    short = short_relation(state.key)
    changes = table_changes(report)
    if report.get("relation_missing"):
        obj, change = short, "dropped"
    elif not changes:
        return None  # only added columns: nothing reading the table breaks
    elif len(changes) == 1:
        obj, change = f"{short}.{changes[0][0]}", changes[0][1]
    else:
        obj, change = short, "; ".join(f"`{col}` {what}" for col, what in changes)
    gone = frozenset(c["column_name"].lower() for c in report.get("removed_from_warehouse") or [])
    retyped = frozenset(c["column_name"].lower() for c in report.get("type_changed") or [])
    evidence = {
        "table": state.key,
        "removed": [c["column_name"] for c in report.get("removed_from_warehouse") or []],
        "added": [c["column_name"] for c in report.get("added_in_warehouse") or []],
        "retyped": [
            {"column": c["column_name"], "from": c.get("manifest_type"), "to": c.get("warehouse_type")}
            for c in report.get("type_changed") or []
        ],
        "likely_renames": report.get("likely_renames") or [],
        "relation_missing": bool(report.get("relation_missing")),
        "compared_with": {"asset": schemas.asset, "version": before.version},
    }
    name = short.split(".")[-1]
    subject = f"{short}:" if obj == short and not report.get("relation_missing") else obj
    return condition_on(
        "schema_change",
        (node, {"system": "warehouse"}, depth),
        facts={"change": change, "subject": subject},
        evidence=evidence,
        source=source,
        onset=onset,
        tool_args={"schema_name": short.split(".")[0], "table_name": name},
        object=obj,
        columns=gone,
        retyped=retyped,
        relations=frozenset({state.key, short, name}),
        name=short,
    )
