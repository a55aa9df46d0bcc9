"""Helpers for the dbt tests: tiny synthetic artifacts written by the tests, and serving a target folder.

Real projects come from the demo (`demo_settings`) and the shared corpus (`corpus_set`); these builders
cover what neither has (PII tags and masking policies, failures and skips, unsupported versions).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ade_platform.config import DbtSettings, Settings
from ade_platform.lib.dbt.publish import publish_target_dir
from ade_platform.store import StoreWriter

PROJECT = "shop"


def schema_url(kind: str, version: int) -> str:
    return f"https://schemas.getdbt.com/dbt/{kind}/v{version}.json"


def _node(
    uid: str, resource_type: str, name: str, schema: str, columns: dict[str, dict[str, Any]] | None
) -> dict[str, Any]:
    """What a model and a source of the synthetic project both carry: ids, where it lives, its columns."""
    return {
        "unique_id": uid,
        "resource_type": resource_type,
        "name": name,
        "package_name": PROJECT,
        "database": "db",
        "schema": schema,
        "relation_name": f'"db"."{schema}"."{name}"',
        "columns": {c: {"name": c, **spec} for c, spec in (columns or {}).items()},
    }


def model(
    name: str,
    deps: list[str] | None = None,
    *,
    columns: dict[str, dict[str, Any]] | None = None,
    materialized: str = "view",
    tags: list[str] | None = None,
    raw: str | None = None,
    compiled: str | None = None,
    schema: str = "analytics",
) -> dict[str, Any]:
    return {
        **_node(f"model.{PROJECT}.{name}", "model", name, schema, columns),
        "alias": name,
        "original_file_path": f"models/{name}.sql",
        "config": {"materialized": materialized},
        "tags": tags or [],
        "description": f"The {name} model.",
        "depends_on": {"nodes": deps or [], "macros": []},
        "raw_code": raw
        if raw is not None
        else f"select * from {{{{ ref('{(deps or ['x'])[0].rsplit('.', 1)[-1]}') }}}}",
        "compiled_code": compiled,
        "checksum": {"name": "sha256", "checksum": name},
        "language": "sql",
    }


def source(
    table: str, columns: dict[str, dict[str, Any]] | None = None, source_name: str = "raw"
) -> dict[str, Any]:
    return {
        **_node(f"source.{PROJECT}.{source_name}.{table}", "source", table, source_name, columns),
        "source_name": source_name,
        "identifier": table,
        "depends_on": {"nodes": []},
    }


def generic_test(kind: str, on: str, column: str, severity: str = "ERROR", **kwargs: Any) -> dict[str, Any]:
    name = f"{kind}_{on.rsplit('.', 1)[-1]}_{column}"
    deps = sorted({on, *kwargs.pop("also_on", [])})
    return {
        "unique_id": f"test.{PROJECT}.{name}.abc",
        "resource_type": "test",
        "name": name,
        "package_name": PROJECT,
        "config": {"severity": severity, "materialized": "test"},
        "column_name": column,
        "attached_node": on,
        "depends_on": {"nodes": deps},
        "test_metadata": {
            "name": kind,
            "namespace": None,
            "kwargs": {"column_name": column, "model": "x", **kwargs},
        },
    }


def manifest(*nodes: dict[str, Any], version: int = 12, adapter: str = "duckdb") -> dict[str, Any]:
    graph: dict[str, Any] = {"nodes": {}, "sources": {}, "exposures": {}, "metrics": {}}
    for node in nodes:
        section = {"source": "sources", "exposure": "exposures"}.get(node["resource_type"], "nodes")
        graph[section][node["unique_id"]] = node
    graph["metadata"] = {
        "dbt_schema_version": schema_url("manifest", version),
        "dbt_version": "1.8.0",
        "project_name": PROJECT,
        "adapter_type": adapter,
        "generated_at": "2026-01-01T00:00:00Z",
    }
    return graph


def catalog(tables: dict[str, list[tuple[str, str]]], version: int = 1) -> dict[str, Any]:
    """tables: unique_id -> [(column, type), ...] in order."""
    nodes: dict[str, Any] = {}
    sources: dict[str, Any] = {}
    for uid, cols in tables.items():
        parts = uid.split(".")
        entry = {
            "unique_id": uid,
            "metadata": {"type": "VIEW", "database": "db", "schema": "raw" if uid.startswith("source.") else "analytics",
                         "name": parts[-1], "comment": None},
            "columns": {c: {"name": c, "type": t, "index": i + 1, "comment": None} for i, (c, t) in enumerate(cols)},
            "stats": {},
        }  # fmt: skip
        (sources if uid.startswith("source.") else nodes)[uid] = entry
    return {
        "metadata": {
            "dbt_schema_version": schema_url("catalog", version),
            "generated_at": "2026-01-02T00:00:00Z",
        },
        "nodes": nodes,
        "sources": sources,
        "errors": None,
    }


def run_results(
    statuses: dict[str, str], version: int = 6, messages: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"dbt_schema_version": schema_url("run-results", version), "invocation_id": "inv-1",
                     "generated_at": "2026-01-03T00:00:00Z", "dbt_version": "1.8.0"},
        "elapsed_time": 12.5,
        "args": {"which": "build"},
        "results": [
            {"unique_id": uid, "status": st, "message": (messages or {}).get(uid), "execution_time": 1.0,
             "failures": 3 if st == "fail" else None,
             "timing": [{"name": "execute", "started_at": "2026-01-03T00:00:01Z", "completed_at": "2026-01-03T00:00:02Z"}]}
            for uid, st in statuses.items()
        ],
    }  # fmt: skip


def write(folder: Path, **artifacts: dict[str, Any]) -> Path:
    """write(folder, manifest=..., catalog=..., run_results=..., sources=...) -> folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in artifacts.items():
        (folder / f"{name}.json").write_text(json.dumps(data))
    return folder


def serve_target(
    settings: Settings, target: Path, project: Path | None = None, store: Path | None = None
) -> Settings:
    """Settings whose dbt toolsets answer about `target` (published into a store of its own)."""
    store_root = store or (settings.home / "stores" / target.name)
    updated = settings.model_copy(
        update={
            "dbt": DbtSettings(project_dir=project or target, target_path=target),
            "store": settings.store.model_copy(update={"root": str(store_root)}),
        }
    )
    publish_target_dir(StoreWriter(updated.store_root), target)
    return updated
