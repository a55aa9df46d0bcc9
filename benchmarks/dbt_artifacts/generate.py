"""Realistic synthetic dbt artifacts (manifest v12, catalog v1, run_results v6) of a chosen size.

`n_nodes` counts everything a real manifest holds as graph nodes: models, tests, seeds, sources and
exposures. The DAG is layered like a real warehouse project: sources -> staging (one source each) ->
intermediate (fan-in from staging and earlier intermediates) -> marts (wide fan-in) -> exposures; a few
"hub" models (dimension tables) are read by many marts (fan-out). Each model has columns, 1-2 generic tests
(not_null, unique, accepted_values, relationships), raw and compiled SQL (import CTEs; some models select
* at the top level), and the config/docs/contract boilerplate dbt writes, so the JSON is about as large as
a real manifest of that size (roughly 3 KB per model).
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

PROJECT = "bench"
MANIFEST_SCHEMA = "https://schemas.getdbt.com/dbt/manifest/v12.json"
CATALOG_SCHEMA = "https://schemas.getdbt.com/dbt/catalog/v1.json"
RUN_RESULTS_SCHEMA = "https://schemas.getdbt.com/dbt/run-results/v6.json"
_COLUMNS = [
    "id",
    "customer_id",
    "order_id",
    "status",
    "amount",
    "created_at",
    "updated_at",
    "country",
    "channel",
]
_CONFIG = {
    "enabled": True,
    "alias": None,
    "schema": None,
    "database": None,
    "tags": [],
    "meta": {},
    "group": None,
    "persist_docs": {},
    "post-hook": [],
    "pre-hook": [],
    "quoting": {},
    "column_types": {},
    "full_refresh": None,
    "unique_key": None,
    "on_schema_change": "ignore",
    "on_configuration_change": "apply",
    "grants": {},
    "packages": [],
    "docs": {"show": True, "node_color": None},
    "contract": {"enforced": False, "alias_types": True},
    "access": "protected",
}


def _model(
    rng: random.Random, layer: str, i: int, parents: list[str], names: dict[str, str]
) -> dict[str, Any]:
    name = f"{layer}_{i:05d}"
    cols = rng.sample(_COLUMNS, k=rng.randint(4, len(_COLUMNS)))
    if "id" not in cols:
        cols[0] = "id"
    materialized = {"stg": "view", "int": rng.choice(["view", "ephemeral", "table"]), "mart": "table"}[layer]
    if layer == "mart" and rng.random() < 0.15:
        materialized = "incremental"
    refs = [names[p] for p in parents]
    imports = ",\n".join(f"{r} as (\n    select * from {{{{ ref('{r}') }}}}\n)" for r in refs)
    top_star = rng.random() < 0.1
    body = (
        "select * from " + refs[0]
        if top_star
        else "select\n    " + ",\n    ".join(f"{refs[0]}.{c}" for c in cols)
    )
    raw = f"with {imports}\n\n{body}\nfrom {refs[0]}" if not top_star else f"with {imports}\n\n{body}"
    compiled = raw
    for r in refs:
        compiled = compiled.replace(f"{{{{ ref('{r}') }}}}", f'"analytics"."{PROJECT}"."{r}"')
    path = f"models/{layer}/{name}.sql"
    tags = [layer] + (["finance"] if rng.random() < 0.2 else [])
    return {
        "database": "analytics",
        "schema": PROJECT,
        "name": name,
        "resource_type": "model",
        "package_name": PROJECT,
        "path": f"{layer}/{name}.sql",
        "original_file_path": path,
        "unique_id": f"model.{PROJECT}.{name}",
        "fqn": [PROJECT, layer, name],
        "alias": name,
        "checksum": {"name": "sha256", "checksum": f"{rng.getrandbits(128):032x}"},
        "config": {**_CONFIG, "materialized": materialized, "tags": tags},
        "tags": tags,
        "description": f"The {layer} model {name}, one row per {cols[0]}.",
        "columns": {
            c: {
                "name": c,
                "description": f"{c} of {name}",
                "meta": {},
                "data_type": None,
                "constraints": [],
                "quote": None,
                "tags": [],
                "granularity": None,
            }
            for c in cols
        },
        "meta": {},
        "group": None,
        "docs": {"show": True, "node_color": None},
        "patch_path": f"{PROJECT}://models/{layer}/_{layer}.yml",
        "build_path": None,
        "unrendered_config": {"materialized": materialized},
        "created_at": 1700000000.0 + i,
        "relation_name": f'"analytics"."{PROJECT}"."{name}"',
        "raw_code": raw,
        "compiled_code": compiled,
        "language": "sql",
        "refs": [{"name": r, "package": None, "version": None} for r in refs],
        "sources": [],
        "metrics": [],
        "depends_on": {"macros": [], "nodes": parents},
        "compiled_path": f"target/compiled/{PROJECT}/{path}",
        "compiled": True,
        "contract": {"enforced": False, "alias_types": True, "checksum": None},
        "access": "protected",
        "constraints": [],
        "version": None,
        "latest_version": None,
        "deprecation_date": None,
    }


def _test(kind: str, model: dict[str, Any], column: str, other: dict[str, Any] | None) -> dict[str, Any]:
    name = f"{kind}_{model['name']}_{column}"
    kwargs: dict[str, Any] = {
        "column_name": column,
        "model": f"{{{{ get_where_subquery(ref('{model['name']}')) }}}}",
    }
    parents = [model["unique_id"]]
    if kind == "accepted_values":
        kwargs["values"] = ["placed", "shipped", "completed", "returned"]
    if kind == "relationships" and other is not None:
        kwargs.update(to=f"ref('{other['name']}')", field="id")
        parents = sorted({model["unique_id"], other["unique_id"]})
    return {
        "database": "analytics",
        "schema": f"{PROJECT}_dbt_test__audit",
        "name": name,
        "resource_type": "test",
        "package_name": PROJECT,
        "path": f"{name}.sql",
        "original_file_path": model["patch_path"].split("://", 1)[1],
        "unique_id": f"test.{PROJECT}.{name}.{hashlib.md5(name.encode()).hexdigest()[:10]}",
        "fqn": [PROJECT, name],
        "alias": name,
        "checksum": {"name": "none", "checksum": ""},
        "config": {"enabled": True, "severity": "warn" if kind == "accepted_values" else "ERROR",
                   "materialized": "test", "warn_if": "!= 0", "error_if": "!= 0", "fail_calc": "count(*)",
                   "store_failures": None, "where": None, "limit": None, "tags": [], "meta": {}},
        "tags": [],
        "description": "",
        "columns": {},
        "meta": {},
        "raw_code": f"{{{{ test_{kind}(**_dbt_generic_test_kwargs) }}}}",
        "language": "sql",
        "refs": [{"name": model["name"], "package": None, "version": None}],
        "sources": [],
        "depends_on": {"macros": [f"macro.dbt.test_{kind}"], "nodes": parents},
        "column_name": column,
        "file_key_name": f"models.{model['name']}",
        "attached_node": model["unique_id"],
        "test_metadata": {"name": kind, "kwargs": kwargs, "namespace": None},
    }  # fmt: skip


def generate(n_nodes: int, seed: int = 11) -> dict[str, dict[str, Any]]:
    """{"manifest": ..., "catalog": ..., "run_results": ...} with about n_nodes graph nodes."""
    rng = random.Random(seed)
    n_models = max(6, int(n_nodes * 0.4))
    n_sources = max(2, n_nodes // 40)
    n_exposures = max(1, n_nodes // 100)
    n_seeds = max(1, n_nodes // 200)
    sources: dict[str, Any] = {}
    for i in range(n_sources):
        uid = f"source.{PROJECT}.raw.t_{i:05d}"
        sources[uid] = {
            "database": "analytics", "schema": "raw", "name": f"t_{i:05d}", "resource_type": "source",
            "package_name": PROJECT, "path": "models/staging/_sources.yml", "unique_id": uid,
            "fqn": [PROJECT, "raw", f"t_{i:05d}"], "source_name": "raw", "source_description": "",
            "loader": "fivetran", "identifier": f"t_{i:05d}", "loaded_at_field": "_loaded_at",
            "freshness": {"warn_after": {"count": 12, "period": "hour"}, "error_after": {"count": 24, "period": "hour"}},
            "columns": {c: {"name": c, "description": "", "meta": {}, "tags": []} for c in _COLUMNS[:4]},
            "relation_name": f'"analytics"."raw"."t_{i:05d}"', "config": {"enabled": True}, "tags": [],
            "depends_on": {"nodes": []}, "meta": {}, "description": "",
        }  # fmt: skip
    nodes: dict[str, Any] = {}
    names = {uid: s["name"] for uid, s in sources.items()}
    source_ids = list(sources)
    staging, intermediate, marts = [], [], []
    shares = {"stg": 0.45, "int": 0.35, "mart": 0.20}
    for layer in ("stg", "int", "mart"):
        for i in range(max(1, int(n_models * shares[layer]))):
            if layer == "stg":
                parents = [source_ids[i % len(source_ids)]]
            elif layer == "int":
                pool = staging + intermediate[-200:]
                parents = rng.sample(pool, k=min(len(pool), rng.randint(2, 4)))
            else:
                hubs = intermediate[:5]
                pool = intermediate + staging
                parents = sorted({*rng.sample(pool, k=min(len(pool), rng.randint(2, 6))), rng.choice(hubs)})
            node = _model(rng, layer, i, sorted(parents), names)
            nodes[node["unique_id"]] = node
            names[node["unique_id"]] = node["name"]
            {"stg": staging, "int": intermediate, "mart": marts}[layer].append(node["unique_id"])
    models = staging + intermediate + marts
    kinds = ["not_null", "unique", "accepted_values", "relationships"]
    budget = max(0, n_nodes - len(models) - n_sources - n_exposures - n_seeds)
    i = 0
    while budget > 0:
        model = nodes[models[i % len(models)]]
        kind = kinds[(i // len(models) + i) % len(kinds)]
        column = list(model["columns"])[(i // len(models)) % len(model["columns"])]
        other = nodes[rng.choice(staging)] if kind == "relationships" else None
        test = _test(kind, model, column, other)
        if test["unique_id"] not in nodes:
            nodes[test["unique_id"]] = test
            budget -= 1
        i += 1
    for i in range(n_seeds):
        uid = f"seed.{PROJECT}.seed_{i:04d}"
        nodes[uid] = {"resource_type": "seed", "name": f"seed_{i:04d}", "unique_id": uid, "package_name": PROJECT,
                      "schema": PROJECT, "database": "analytics", "config": {"materialized": "seed"},
                      "depends_on": {"nodes": [], "macros": []}, "columns": {}, "tags": []}  # fmt: skip
    exposures = {}
    for i in range(n_exposures):
        uid = f"exposure.{PROJECT}.dashboard_{i:04d}"
        exposures[uid] = {"resource_type": "exposure", "name": f"dashboard_{i:04d}", "unique_id": uid,
                          "type": "dashboard", "owner": {"name": "BI team", "email": "bi@example.com"},
                          "package_name": PROJECT, "depends_on": {"nodes": sorted(rng.sample(marts, k=min(3, len(marts))))},
                          "tags": [], "description": ""}  # fmt: skip
    parent_map = {
        uid: list(n.get("depends_on", {}).get("nodes", [])) for uid, n in {**nodes, **exposures}.items()
    }
    child_map: dict[str, list[str]] = {uid: [] for uid in [*nodes, *sources, *exposures]}
    for uid, parents in parent_map.items():
        for parent in parents:
            child_map.setdefault(parent, []).append(uid)
    metadata = {"dbt_schema_version": MANIFEST_SCHEMA, "dbt_version": "1.10.0", "project_name": PROJECT,
                "generated_at": "2026-01-01T00:00:00Z", "invocation_id": "bench", "adapter_type": "duckdb"}  # fmt: skip
    manifest = {
        "metadata": metadata, "nodes": nodes, "sources": sources, "exposures": exposures, "metrics": {},
        "macros": {}, "docs": {}, "groups": {}, "selectors": {}, "disabled": {}, "parent_map": parent_map,
        "child_map": child_map, "group_map": {}, "saved_queries": {}, "semantic_models": {}, "unit_tests": {},
    }  # fmt: skip
    catalog_nodes = {
        uid: {"metadata": {"type": "BASE TABLE", "schema": PROJECT, "name": nodes[uid]["name"], "database": "analytics",
                           "comment": None, "owner": None},
              "columns": {c: {"type": "VARCHAR", "index": k + 1, "name": c, "comment": None}
                          for k, c in enumerate(nodes[uid]["columns"])},
              "stats": {}, "unique_id": uid}
        for uid in models
        if nodes[uid]["config"]["materialized"] != "ephemeral"
    }  # fmt: skip
    catalog = {"metadata": {"dbt_schema_version": CATALOG_SCHEMA, "dbt_version": "1.10.0",
                            "generated_at": "2026-01-01T00:00:00Z"}, "nodes": catalog_nodes, "sources": {}, "errors": None}  # fmt: skip
    results = [
        {"status": "success" if nodes[uid]["resource_type"] == "model" else "pass", "unique_id": uid,
         "timing": [], "thread_id": "Thread-1", "execution_time": 0.1, "adapter_response": {}, "message": None,
         "failures": None if nodes[uid]["resource_type"] == "model" else 0}
        for uid in nodes
        if nodes[uid]["resource_type"] in ("model", "test")
        and nodes[uid]["config"]["materialized"] != "ephemeral"
    ]  # fmt: skip
    run_results = {"metadata": {"dbt_schema_version": RUN_RESULTS_SCHEMA, "dbt_version": "1.10.0",
                                "generated_at": "2026-01-01T00:00:00Z", "invocation_id": "bench"},
                   "results": results, "elapsed_time": 12.0, "args": {"which": "build"}}  # fmt: skip
    return {"manifest": manifest, "catalog": catalog, "run_results": run_results}
