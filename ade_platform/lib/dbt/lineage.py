"""The compact lineage index (built once per manifest) and graph traversal over it.

The index is plain JSON so it can live in the asset store: a 50k-node manifest of ~110 MB becomes an index of
~50 MB (no SQL, no config boilerplate) that the MCP bridge parses once per version (about a second) and then
answers from in microseconds.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Literal

INDEX_FORMAT = 1
GRAPH_SECTIONS = ("nodes", "sources", "exposures", "metrics", "semantic_models", "saved_queries")
_TEST_KWARGS_SKIP = {"column_name", "model"}
_TEST_CONFIG_KEYS = ("where", "limit", "warn_if", "error_if", "fail_calc", "store_failures")
_TEST_CONFIG_DEFAULTS = {"warn_if": "!= 0", "error_if": "!= 0", "fail_calc": "count(*)"}


def _materialization(node: dict[str, Any]) -> str | None:
    config = node.get("config") or {}
    return config.get("materialized")


def _node_record(unique_id: str, node: dict[str, Any]) -> dict[str, Any]:
    resource_type = node.get("resource_type") or unique_id.split(".", 1)[0]
    record: dict[str, Any] = {
        "resource_type": resource_type,
        "name": node.get("name"),
        "package": node.get("package_name"),
        "database": node.get("database"),
        "schema": node.get("schema"),
        "materialization": _materialization(node),
        "tags": sorted(set(node.get("tags") or [])),
        "path": node.get("original_file_path"),
        "relation_name": node.get("relation_name"),
        "alias": node.get("alias") or node.get("identifier"),
    }
    if resource_type == "source":
        record["source_name"] = node.get("source_name")
        record["identifier"] = node.get("identifier")
    if resource_type == "exposure":
        record["exposure_type"] = node.get("type")
        record["owner"] = (node.get("owner") or {}).get("name") or (node.get("owner") or {}).get("email")
    if resource_type == "test":
        meta = node.get("test_metadata") or {}
        config = node.get("config") or {}
        kwargs = meta.get("kwargs") or {}
        record["test_name"] = meta.get("name")
        record["test_namespace"] = meta.get("namespace")
        record["test_type"] = "generic" if meta else "singular"
        record["column_name"] = node.get("column_name") or kwargs.get("column_name")
        record["severity"] = str(config.get("severity") or "ERROR").lower()
        record["attached_node"] = node.get("attached_node")
        # The test's arguments (accepted values, relationship target, ...) without the boilerplate.
        record["kwargs"] = {k: v for k, v in kwargs.items() if k not in _TEST_KWARGS_SKIP}
        record["test_config"] = {
            k: config[k]
            for k in _TEST_CONFIG_KEYS
            if config.get(k) not in (None, _TEST_CONFIG_DEFAULTS.get(k))
        }
    elif node.get("description"):
        record["description"] = node["description"]
    return record


def _column_record(name: str, col: dict[str, Any]) -> dict[str, Any]:
    # dbt >= 1.10 may also carry column tags/meta under `config`.
    config = col.get("config") or {}
    tags = sorted({*(col.get("tags") or []), *(config.get("tags") or [])})
    meta = {**(config.get("meta") or {}), **(col.get("meta") or {})}
    record = {
        "name": col.get("name") or name,
        "description": col.get("description") or "",
        "data_type": col.get("data_type"),
        "tags": tags,
        "meta": meta,
    }
    if col.get("policy_tags"):
        record["policy_tags"] = col["policy_tags"]
    return record


def build_lineage_index(manifest: dict[str, Any], catalog: dict[str, Any] | None = None) -> dict[str, Any]:
    """Reduce a manifest (and optionally a catalog) to what graph questions need."""
    nodes: dict[str, dict[str, Any]] = {}
    parents: dict[str, list[str]] = {}
    for section in GRAPH_SECTIONS:
        for unique_id, node in (manifest.get(section) or {}).items():
            nodes[unique_id] = _node_record(unique_id, node)
            deps = (node.get("depends_on") or {}).get("nodes") or []
            parents[unique_id] = sorted(set(deps))
    children: dict[str, list[str]] = {uid: [] for uid in nodes}
    tests_by_node: dict[str, list[str]] = {}
    for unique_id, deps in parents.items():
        is_test = nodes[unique_id]["resource_type"] == "test"
        for parent in deps:
            children.setdefault(parent, []).append(unique_id)
            if is_test:
                tests_by_node.setdefault(parent, []).append(unique_id)
    for kids in children.values():
        kids.sort()
    columns: dict[str, list[dict[str, Any]]] = {}
    for section in ("nodes", "sources"):
        for unique_id, node in (manifest.get(section) or {}).items():
            declared = node.get("columns") or {}
            if declared:
                columns[unique_id] = [_column_record(name, col) for name, col in declared.items()]
    catalog_columns: dict[str, list[dict[str, Any]]] = {}
    for section in ("nodes", "sources"):
        for unique_id, entry in ((catalog or {}).get(section) or {}).items():
            cols = sorted((entry.get("columns") or {}).values(), key=lambda c: c.get("index") or 0)
            catalog_columns[unique_id] = [{"name": c.get("name"), "type": c.get("type")} for c in cols]
    metadata = manifest.get("metadata") or {}
    return {
        "format": INDEX_FORMAT,
        "project_name": metadata.get("project_name") or _root_package(manifest),
        "adapter_type": metadata.get("adapter_type"),
        "dbt_version": metadata.get("dbt_version"),
        "dbt_schema_version": metadata.get("dbt_schema_version"),
        "generated_at": metadata.get("generated_at"),
        "nodes": nodes,
        "parents": parents,
        "children": children,
        "tests_by_node": tests_by_node,
        "columns": columns,
        "catalog_columns": catalog_columns,
    }


def _root_package(manifest: dict[str, Any]) -> str | None:
    """Old manifests may lack metadata.project_name: the most common package outside installed packages."""
    counts: dict[str, int] = {}
    for node in (manifest.get("nodes") or {}).values():
        root = str(node.get("root_path") or "")
        if "dbt_packages" in root or "dbt_modules" in root or not node.get("package_name"):
            continue
        counts[node["package_name"]] = counts.get(node["package_name"], 0) + 1
    return max(counts, key=lambda k: counts[k]) if counts else None


def graph_views(index: dict[str, Any]) -> dict[str, Any]:
    """Test-free adjacency, built once per index version, so walks never look at (the many) test nodes."""
    records = index["nodes"]
    tests = {uid for uid, rec in records.items() if rec.get("resource_type") == "test"}
    children = {}
    for uid, kids in index["children"].items():
        kept = [kid for kid in kids if kid not in tests]
        if kept:
            children[uid] = kept
    parents = {uid: [p for p in deps if p not in tests] for uid, deps in index["parents"].items() if deps}
    # what a lineage answer shows of each node, as one tuple: one lookup per node instead of five
    shown = {
        uid: (rec.get("resource_type"), rec.get("name"), rec.get("schema"), rec.get("materialization"))
        for uid, rec in records.items()
    }
    return {"children": children, "parents": parents, "has_dependents": frozenset(children), "shown": shown}


def traverse(
    index: dict[str, Any],
    node_id: str,
    direction: Literal["upstream", "downstream"],
    depth: int | None = None,
    max_nodes: int = 500,
    include_tests: bool = False,
    views: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Breadth-first walk from node_id. Edges always point from the dependency to its dependent.

    `views` (from graph_views) makes the walk skip tests without looking at them.
    """
    key = "parents" if direction == "upstream" else "children"
    prefiltered = views is not None and not include_tests
    adjacency = views[key] if prefiltered else index[key]  # type: ignore[index]
    records = index["nodes"]
    filter_tests = not prefiltered and not include_tests
    upstream = direction == "upstream"
    seen = {node_id: 0}
    order = [node_id]
    edges: list[dict[str, str]] = []
    queue = deque([node_id])
    truncated = False
    room = max_nodes - 1
    while queue:
        current = queue.popleft()
        level = seen[current]
        if depth is not None and level >= depth:
            continue
        for neighbour in adjacency.get(current, ()):
            if filter_tests:
                rec = records.get(neighbour)
                if rec is not None and rec["resource_type"] == "test":
                    continue
            if neighbour not in seen:
                if room <= 0:
                    truncated = True
                    continue
                room -= 1
                seen[neighbour] = level + 1
                order.append(neighbour)
                queue.append(neighbour)
            edges.append(
                {"from": neighbour, "to": current} if upstream else {"from": current, "to": neighbour}
            )
    shown = views["shown"] if views is not None else {}
    nodes = []
    for uid in order:
        row = shown.get(uid)
        if row is None:
            rec = records.get(uid) or {"resource_type": uid.split(".", 1)[0], "name": uid.rsplit(".", 1)[-1]}
            row = (rec.get("resource_type"), rec.get("name"), rec.get("schema"), rec.get("materialization"))
        nodes.append(
            {
                "node_id": uid,
                "resource_type": row[0],
                "name": row[1],
                "schema": row[2],
                "materialization": row[3],
                "depth": seen[uid],
            }
        )
    return {
        "root_node": node_id,
        "direction": direction,
        "depth": depth,
        "nodes": nodes,
        "edges": edges,
        "total_nodes": len(nodes),
        "truncated": truncated,
    }


def has_dependents(index: dict[str, Any], node_id: str) -> bool:
    """True when some non-test node (model, snapshot, exposure, metric, ...) depends on node_id."""
    records = index["nodes"]
    return any(
        (records.get(child) or {}).get("resource_type") != "test"
        for child in index["children"].get(node_id, ())
    )


def blast_radius(
    index: dict[str, Any], node_id: str, max_nodes: int = 500, views: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Everything downstream of node_id (tests included, seeds excluded), with its hop distance."""
    dependents = views["has_dependents"] if views is not None else None
    children = index["children"]
    records = index["nodes"]
    hops = {node_id: 0}
    queue = deque([node_id])
    affected: list[dict[str, Any]] = []
    truncated = False
    while queue:
        current = queue.popleft()
        for child in children.get(current, ()):
            if child in hops:
                continue
            if len(affected) >= max_nodes:
                truncated = True
                queue.clear()
                break
            hops[child] = hops[current] + 1
            queue.append(child)
            rec = records.get(child) or {}
            rtype = rec.get("resource_type") or child.split(".", 1)[0]
            if rtype == "seed":
                continue
            affected.append(
                {
                    "node_id": child,
                    "name": rec.get("name") or child.rsplit(".", 1)[-1],
                    "resource_type": rtype,
                    "materialization": rec.get("materialization") if rtype != "test" else None,
                    "hops_from_source": hops[child],
                    "has_downstream_dependents": (
                        child in dependents if dependents is not None else has_dependents(index, child)
                    ),
                }
            )
    affected.sort(key=lambda item: (item["hops_from_source"], item["node_id"]))
    return {"node_id": node_id, "affected": affected, "total_affected": len(affected), "truncated": truncated}
