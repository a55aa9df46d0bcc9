"""What the dbt manifest (and catalog) declare about warehouse relations: columns, types, tags, unique keys.

Reduced once per manifest version (callers memoize with `snapshot.derived`) to the few fields drift,
PII and duplicate checks need.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

RELATION_TYPES = ("model", "seed", "snapshot", "source")
_PLAIN_IDENT = re.compile(r'^"?[A-Za-z_][A-Za-z0-9_$]*"?$')


@dataclass(frozen=True)
class DeclaredColumn:
    name: str
    data_type: str | None  # as written in the manifest, else as dbt's catalog observed it
    type_source: str | None  # "manifest" | "catalog" | None
    tags: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    index: int | None = None  # position in the catalog (1-based), when known


@dataclass(frozen=True)
class Relation:
    unique_id: str
    name: str
    resource_type: str
    package: str | None
    database: str | None
    schema: str
    identifier: str
    tags: tuple[str, ...]
    columns: tuple[DeclaredColumn, ...]
    columns_source: str  # "manifest" when the yml declares columns, "catalog" when only dbt observed them
    catalog_columns: frozenset[str] = frozenset()  # lower-cased names dbt's catalog saw (empty: no catalog)

    def key(self) -> tuple[str, str]:
        return (self.schema.lower(), self.identifier.lower())


def _catalog_columns(catalog: dict[str, Any] | None, unique_id: str) -> dict[str, dict[str, Any]]:
    section = "sources" if unique_id.startswith("source.") else "nodes"
    entry = ((catalog or {}).get(section) or {}).get(unique_id) or {}
    return {str(name).lower(): col for name, col in (entry.get("columns") or {}).items()}


def _relation(unique_id: str, node: dict[str, Any], catalog: dict[str, Any] | None) -> Relation | None:
    resource_type = node.get("resource_type") or unique_id.split(".", 1)[0]
    if resource_type not in RELATION_TYPES:
        return None
    config = node.get("config") or {}
    if resource_type != "source" and config.get("materialized") == "ephemeral":
        return None
    if resource_type == "source":
        identifier = node.get("identifier") or node.get("name")
    else:
        identifier = node.get("alias") or node.get("name")
    schema = node.get("schema")
    if not identifier or not schema:
        return None
    observed = _catalog_columns(catalog, unique_id)
    declared = node.get("columns") or {}
    columns: list[DeclaredColumn] = []
    if declared:
        for key, col in declared.items():
            name = col.get("name") or key
            seen = observed.get(name.lower()) or {}
            manifest_type = col.get("data_type")
            columns.append(
                DeclaredColumn(
                    name=name,
                    data_type=manifest_type or seen.get("type"),
                    type_source="manifest" if manifest_type else ("catalog" if seen.get("type") else None),
                    tags=tuple(col.get("tags") or ()),
                    meta=dict(col.get("meta") or {}),
                    index=seen.get("index"),
                )
            )
        source = "manifest"
    else:
        for col in sorted(observed.values(), key=lambda c: c.get("index") or 0):
            columns.append(
                DeclaredColumn(
                    name=col.get("name"),
                    data_type=col.get("type"),
                    type_source="catalog",
                    index=col.get("index"),
                )
            )
        source = "catalog"
    return Relation(
        unique_id=unique_id,
        name=node.get("name") or identifier,
        resource_type=resource_type,
        package=node.get("package_name"),
        database=node.get("database"),
        schema=schema,
        identifier=identifier,
        tags=tuple(node.get("tags") or ()),
        columns=tuple(columns),
        columns_source=source,
        catalog_columns=frozenset(observed),
    )


def relations(manifest: dict[str, Any], catalog: dict[str, Any] | None = None) -> dict[str, Relation]:
    """unique_id -> Relation for every model, seed, snapshot and source that lives in the warehouse."""
    found: dict[str, Relation] = {}
    for section in ("nodes", "sources"):
        for unique_id, node in (manifest.get(section) or {}).items():
            relation = _relation(unique_id, node, catalog)
            if relation is not None:
                found[unique_id] = relation
    return found


def by_table(rels: dict[str, Relation]) -> dict[tuple[str, str], list[Relation]]:
    """(schema, identifier) lower-cased -> relations (dbt models first): to map warehouse tables back."""
    index: dict[tuple[str, str], list[Relation]] = {}
    for rel in rels.values():
        index.setdefault(rel.key(), []).append(rel)
    for entries in index.values():
        entries.sort(key=lambda r: (r.resource_type != "model", r.unique_id))
    return index


def find_model(
    rels: dict[str, Relation], name: str, project: str | None = None
) -> tuple[Relation | None, list[str]]:
    """The relation a model name (or unique_id) means; otherwise None and close names as suggestions."""
    if name in rels:
        return rels[name], []
    lowered = name.lower()
    matches = [r for r in rels.values() if r.resource_type != "source" and r.name.lower() == lowered]
    if not matches:
        matches = [
            r for r in rels.values() if r.resource_type == "source" and r.identifier.lower() == lowered
        ]
    if len(matches) > 1 and project:
        matches = [r for r in matches if r.package == project] or matches
    if matches:
        matches.sort(key=lambda r: (r.resource_type != "model", r.unique_id))
        return matches[0], []
    import difflib

    names = sorted({r.name for r in rels.values() if r.resource_type != "source"})
    return None, difflib.get_close_matches(name, names, n=5, cutoff=0.6)


@dataclass(frozen=True)
class UniqueKey:
    test_id: str
    relation_id: str
    columns: tuple[str, ...]


def unique_keys(manifest: dict[str, Any]) -> list[UniqueKey]:
    """Keys that dbt `unique` (and dbt_utils `unique_combination_of_columns`) tests declare."""
    keys: list[UniqueKey] = []
    for unique_id, node in (manifest.get("nodes") or {}).items():
        if node.get("resource_type") != "test":
            continue
        meta = node.get("test_metadata") or {}
        kwargs = meta.get("kwargs") or {}
        if meta.get("name") == "unique":
            columns = [kwargs.get("column_name") or node.get("column_name")]
        elif meta.get("name") == "unique_combination_of_columns":
            columns = list(kwargs.get("combination_of_columns") or [])
        else:
            continue
        if not columns or not all(isinstance(c, str) and _PLAIN_IDENT.match(c) for c in columns):
            continue  # expressions (e.g. concat(a, b)) are not columns we can group by safely
        parent = node.get("attached_node") or next(
            iter((node.get("depends_on") or {}).get("nodes") or []), None
        )
        if not parent:
            continue
        keys.append(UniqueKey(unique_id, parent, tuple(c.strip('"') for c in columns)))
    keys.sort(key=lambda k: (k.relation_id, k.columns))
    return keys
