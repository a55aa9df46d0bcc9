"""Schema drift: what dbt declares for a relation vs what the warehouse snapshot shows, and since when.

Declared columns come from the manifest; a declared type is the manifest's `data_type` when written,
otherwise the type dbt's catalog observed when the docs were last generated (each change says which).
"Since when" walks the schema snapshot history back from the newest version: the first version of the
unbroken run in which the warehouse already looked as it does now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ade_platform.lib.warehouse.manifest import Relation
from ade_platform.lib.warehouse.schema import find_column, qualified
from ade_platform.lib.warehouse.types import normalize_type, same_type


def compare(relation: Relation, table: dict[str, Any] | None, warehouse_type: str) -> dict[str, Any]:
    """The drift report of one relation against its table in a schema snapshot (None = table missing)."""
    declared = {c.name.lower(): c for c in relation.columns}
    base = {
        "model_name": relation.name,
        "unique_id": relation.unique_id,
        "relation": f"{relation.schema}.{relation.identifier}",
        "declared_from": relation.columns_source,
    }
    if table is None:
        removed = [
            {
                "column_name": c.name,
                "declared_type": c.data_type,
                "note": "Relation is absent from the warehouse",
            }
            for c in relation.columns
        ]
        return {
            **base,
            "drift_detected": True,
            "relation_missing": True,
            "added_in_warehouse": [],
            "removed_from_warehouse": removed,
            "type_changed": [],
            "likely_renames": [],
            "unchanged_count": 0,
        }
    observed = {c["name"].lower(): c for c in table["columns"]}
    added = [
        {
            "column_name": col["name"],
            "data_type": col["type"],
            "note": "Column exists in warehouse but not declared in manifest",
        }
        for key, col in observed.items()
        if key not in declared
    ]
    removed = [
        {
            "column_name": col.name,
            "declared_type": col.data_type,
            "note": "Column declared in manifest but absent from warehouse",
        }
        for key, col in declared.items()
        if key not in observed
    ]
    changed = []
    unchanged = 0
    for key, col in declared.items():
        seen = observed.get(key)
        if seen is None:
            continue
        if same_type(col.data_type, seen["type"], warehouse_type):
            unchanged += 1
            continue
        changed.append(
            {
                "column_name": seen["name"],
                "manifest_type": col.data_type,
                "warehouse_type": seen["type"],
                "normalized": [
                    normalize_type(col.data_type, warehouse_type),
                    normalize_type(seen["type"], warehouse_type),
                ],
                "declared_type_source": col.type_source,
                "note": "Type mismatch between manifest declaration and warehouse column",
            }
        )
    return {
        **base,
        "relation": qualified(table),
        "drift_detected": bool(added or removed or changed),
        "relation_missing": False,
        "added_in_warehouse": added,
        "removed_from_warehouse": removed,
        "type_changed": changed,
        "likely_renames": _likely_renames(relation, removed, added, table, warehouse_type),
        "unchanged_count": unchanged,
    }


def _likely_renames(
    relation: Relation,
    removed: list[dict[str, Any]],
    added: list[dict[str, Any]],
    table: dict[str, Any],
    warehouse_type: str,
) -> list[dict[str, str]]:
    """Pair a removed column with an added one of the same type at the same position (or 1:1)."""
    if not removed or not added:
        return []
    declared = {c.name.lower(): c for c in relation.columns}
    positions = {c["name"].lower(): c["position"] for c in table["columns"]}
    pairs = []
    free = list(added)
    for gone in removed:
        decl = declared[gone["column_name"].lower()]
        candidates = [
            a
            for a in free
            if same_type(decl.data_type, a["data_type"], warehouse_type)
            and (len(removed) == len(added) == 1 or positions.get(a["column_name"].lower()) == decl.index)
        ]
        if len(candidates) == 1:
            pairs.append({"from": gone["column_name"], "to": candidates[0]["column_name"]})
            free.remove(candidates[0])
    return pairs


@dataclass(frozen=True)
class SnapshotRef:
    version: str
    materialized_at: str


def since_when(
    report: dict[str, Any],
    history: Sequence[SnapshotRef],
    table_at: Callable[[str], dict[str, Any] | None],
    warehouse_type: str,
) -> dict[str, Any]:
    """Annotate every change of `report` with the snapshot version that first showed it.

    `history` is the retained schema snapshot versions, newest first (the first one is what `report`
    was computed from); `table_at(version)` returns the relation's table in that version or None.
    """
    changes: list[tuple[dict[str, Any], Callable[[dict[str, Any] | None], bool]]] = []
    for item in report.get("added_in_warehouse", []):
        name = item["column_name"]
        changes.append((item, lambda t, n=name: t is not None and find_column(t, n) is not None))
    for item in report.get("removed_from_warehouse", []):
        name = item["column_name"]
        changes.append((item, lambda t, n=name: t is None or find_column(t, n) is None))
    for item in report.get("type_changed", []):
        name, now = item["column_name"], normalize_type(item["warehouse_type"], warehouse_type)

        def holds(t: dict[str, Any] | None, n: str = name, now: str | None = now) -> bool:
            col = find_column(t, n) if t is not None else None
            return col is not None and normalize_type(col["type"], warehouse_type) == now

        changes.append((item, holds))
    if not changes or not history:
        return report
    open_changes = list(changes)
    first: dict[int, SnapshotRef] = {}
    for ref in history:
        table = table_at(ref.version)
        still_open = []
        for item, holds in open_changes:
            if holds(table):
                first[id(item)] = ref
                still_open.append((item, holds))
        open_changes = still_open
        if not open_changes:
            break
    oldest = history[-1].version
    for item, _ in changes:
        ref = first.get(id(item))
        if ref is not None:
            item["since"] = {
                "first_seen_version": ref.version,
                "first_seen_at": ref.materialized_at,
                # True when even the oldest retained snapshot shows it: it started there or earlier.
                "at_or_before": ref.version == oldest,
            }
    return report


def summarize(
    rels: dict[str, Relation],
    table_of: Callable[[Relation], dict[str, Any] | None],
    warehouse_type: str,
) -> dict[str, Any]:
    """Drift of every relation, split into errors and warnings for the asset check.

    Errors break consumers: a declared column removed or retyped, a relation missing. Warnings are
    columns neither the manifest nor dbt's catalog knew: they appeared in the warehouse outside dbt.
    Columns a model has but does not document (known to the catalog) are reported, not flagged.
    """
    drifted, errors, warnings = [], 0, 0
    for rel in sorted(rels.values(), key=lambda r: r.unique_id):
        report = compare(rel, table_of(rel), warehouse_type)
        if not report["drift_detected"]:
            continue
        unknown = [
            a["column_name"]
            for a in report["added_in_warehouse"]
            if rel.catalog_columns and a["column_name"].lower() not in rel.catalog_columns
        ]
        report["unknown_to_dbt"] = unknown
        breaking = len(report["removed_from_warehouse"]) + len(report["type_changed"])
        report["severity"] = (
            "error" if breaking or report["relation_missing"] else ("warn" if unknown else "info")
        )
        errors += report["severity"] == "error"
        warnings += report["severity"] == "warn"
        drifted.append(report)
    return {
        "warehouse_type": warehouse_type,
        "checked": len(rels),
        "drifted": len(drifted),
        "errors": errors,
        "warnings": warnings,
        "relations": drifted,
    }
