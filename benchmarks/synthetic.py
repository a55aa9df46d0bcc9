"""A small deterministic synthetic manifest for platform benchmarks (schema v12 shape).

Layers: sources -> staging -> intermediate -> marts, with fan-in and a test per model. The dbt-artifacts
benchmark has its own, richer generator; this one only needs realistic size and shape.
"""

from __future__ import annotations

import random
from typing import Any

SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"


def synthetic_manifest(n_nodes: int, seed: int = 7) -> dict[str, Any]:
    rng = random.Random(seed)
    n_models = max(4, n_nodes // 2)
    n_sources = max(1, n_models // 10)
    sources = {
        f"source.synthetic.raw.t{i}": {
            "resource_type": "source", "name": f"t{i}", "source_name": "raw", "schema": "raw",
            "package_name": "synthetic", "depends_on": {"nodes": []}, "columns": {},
        }
        for i in range(n_sources)
    }  # fmt: skip
    layers = [("stg", 0.4), ("int", 0.35), ("mart", 0.25)]
    nodes: dict[str, Any] = {}
    previous = list(sources)
    counter = 0
    for prefix, share in layers:
        current = []
        for i in range(max(1, int(n_models * share))):
            uid = f"model.synthetic.{prefix}_{i}"
            parents = rng.sample(previous, k=min(len(previous), rng.randint(1, 3)))
            nodes[uid] = {
                "resource_type": "model", "name": f"{prefix}_{i}", "schema": "analytics",
                "package_name": "synthetic", "config": {"materialized": "table" if prefix == "mart" else "view"},
                "depends_on": {"nodes": parents}, "columns": {"id": {"name": "id", "description": ""}},
                "tags": [prefix], "original_file_path": f"models/{prefix}/{prefix}_{i}.sql",
            }  # fmt: skip
            current.append(uid)
            counter += 1
        previous = current + rng.sample(previous, k=min(len(previous), len(current) // 4))
    for uid in list(nodes)[: n_nodes - len(nodes)]:
        name = nodes[uid]["name"]
        tid = f"test.synthetic.not_null_{name}_id"
        nodes[tid] = {
            "resource_type": "test", "name": f"not_null_{name}_id", "package_name": "synthetic",
            "depends_on": {"nodes": [uid]}, "test_metadata": {"name": "not_null", "kwargs": {"column_name": "id"}},
            "column_name": "id", "attached_node": uid, "config": {"severity": "ERROR"},
        }  # fmt: skip
    return {
        "metadata": {"dbt_schema_version": SCHEMA, "dbt_version": "1.10.0", "project_name": "synthetic"},
        "nodes": nodes, "sources": sources, "exposures": {}, "metrics": {},
    }  # fmt: skip
