"""Column lists of a node: as declared in the manifest (YAML) or as observed in the catalog (warehouse)."""

from __future__ import annotations

from typing import Any


def catalog_index(catalog: dict[str, Any]) -> dict[str, Any]:
    """Reduce catalog.json to ordered column lists per unique_id (built once per catalog version)."""
    entries: dict[str, dict[str, Any]] = {}
    for section in ("nodes", "sources"):
        for uid, entry in (catalog.get(section) or {}).items():
            meta = entry.get("metadata") or {}
            cols = sorted(
                (entry.get("columns") or {}).values(),
                key=lambda c: (c.get("index") is None, c.get("index") or 0),
            )
            entries[uid] = {
                "database": meta.get("database"),
                "schema": meta.get("schema"),
                "name": meta.get("name"),
                "relation_type": meta.get("type"),
                "columns": [
                    {
                        "column_name": c.get("name"),
                        "data_type": c.get("type"),
                        "comment": c.get("comment"),
                        "index": c.get("index"),
                    }
                    for c in cols
                ],
            }
    meta = catalog.get("metadata") or {}
    return {
        "generated_at": meta.get("generated_at"),
        "dbt_version": meta.get("dbt_version"),
        "entries": entries,
        "errors": catalog.get("errors"),
    }


def manifest_schema(index: dict[str, Any], node_id: str) -> dict[str, Any]:
    rec = index["nodes"].get(node_id) or {}
    columns = [
        {
            "column_name": col.get("name"),
            "data_type": col.get("data_type"),
            "comment": col.get("description") or None,
            "index": position,
            "tags": col.get("tags") or [],
        }
        for position, col in enumerate(index["columns"].get(node_id, ()), start=1)
    ]
    return {
        "model_name": rec.get("name"),
        "node_id": node_id,
        "source": "manifest",
        "schema": rec.get("schema"),
        "database": rec.get("database"),
        "manifest_generated_at": index.get("generated_at"),
        "columns": columns,
        "total_columns": len(columns),
    }


def catalog_schema(index: dict[str, Any], catalog: dict[str, Any], node_id: str) -> dict[str, Any]:
    rec = index["nodes"].get(node_id) or {}
    entry = catalog["entries"].get(node_id)
    columns = list(entry["columns"]) if entry else []
    body = {
        "model_name": rec.get("name"),
        "node_id": node_id,
        "source": "catalog",
        "schema": (entry or {}).get("schema") or rec.get("schema"),
        "database": (entry or {}).get("database") or rec.get("database"),
        "relation_type": (entry or {}).get("relation_type"),
        "catalog_generated_at": catalog.get("generated_at"),
        "in_catalog": entry is not None,
        "columns": columns,
        "total_columns": len(columns),
    }
    if entry is None:
        body["note"] = (
            "the node is not in catalog.json: it was not built when `dbt docs generate` ran, or it is "
            "ephemeral; the declared columns are available with source='manifest'"
        )
    return body


def with_observed_columns(body: dict[str, Any], state: dict[str, Any], observed_at: str) -> dict[str, Any]:
    """A catalog answer with the columns a live read of its relation saw after the catalog was generated (a
    table_schema observation's state: the relation as the warehouse has it now, or gone)."""
    exists = bool(state.get("exists"))
    columns = [
        {
            "column_name": c.get("name"),
            "data_type": c.get("type"),
            "comment": None,
            "index": c.get("position"),
        }
        for c in (state.get("columns") or [])
    ]
    out = {**body, "columns": columns, "total_columns": len(columns), "columns_observed_at": observed_at}
    out["exists_in_warehouse"] = exists
    if not exists:
        out["note"] = "a live read after the catalog was generated found no such relation in the warehouse"
    return out
