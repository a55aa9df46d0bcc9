"""Which relations to profile, and how: every dbt model, seed, snapshot and source of the manifest that the
warehouse's schema snapshot holds, with its columns as the warehouse spells and types them, the keys dbt's
`unique` tests declare on it, and the columns whose values a profile must not hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ade_platform.lib.profiles.sql import protected_columns
from ade_platform.lib.sql_protect import ProtectRules, tagged_columns
from ade_platform.lib.warehouse import manifest
from ade_platform.lib.warehouse import schema as wschema

_ORDER = {"source": 0, "seed": 1, "snapshot": 2, "model": 3}


@dataclass(frozen=True)
class Target:
    unique_id: str  # the dbt node
    parts: tuple[str, ...]  # (database, schema, name) as the warehouse spells them
    columns: tuple[tuple[str, str], ...]  # (name, type) from the schema snapshot
    unique_keys: tuple[tuple[str, ...], ...]
    protected: frozenset[str]


def profile_targets(
    manifest_data: dict[str, Any],
    catalog: dict[str, Any] | None,
    snapshot: dict[str, Any],
    rules_for: Any,
) -> list[Target]:
    """The relations to profile, sources first then models (upstream before downstream, roughly: a run cut short
    by its budget keeps the roots). `rules_for(tagged)` gives the ProtectRules with dbt's pii-tagged columns."""
    rels = manifest.relations(manifest_data, catalog)
    rules: ProtectRules = rules_for(tagged_columns(rels.values()))
    keys: dict[str, list[tuple[str, ...]]] = {}
    for key in manifest.unique_keys(manifest_data):
        keys.setdefault(key.relation_id, []).append(tuple(key.columns))
    index = wschema.index_tables(snapshot)
    found: dict[tuple[str, ...], Target] = {}
    for rel in sorted(rels.values(), key=lambda r: (_ORDER.get(r.resource_type, 9), r.unique_id)):
        table = wschema.relation_table(index, rel.schema, rel.identifier, rel.database)
        if table is None or not table.get("columns"):
            continue
        parts = tuple(p for p in (table.get("database"), table["schema"], table["name"]) if p)
        if parts in found:
            continue
        columns = tuple((c["name"], str(c.get("type") or "")) for c in table["columns"])
        found[parts] = Target(
            unique_id=rel.unique_id,
            parts=parts,
            columns=columns,
            unique_keys=tuple(keys.get(rel.unique_id, ())),
            protected=protected_columns(parts, [c for c, _ in columns], rules),
        )
    return list(found.values())
