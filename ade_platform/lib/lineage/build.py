"""Build the cross-stack lineage graph from what the store holds, with any subset of the systems present.

Nodes are `<system>:<kind>:<key>` ids (see docs/STORE_ASSETS.md). Data-flow edges point from what is read to what
reads it (source table → dbt source → model → table → BI tile → dashboard); `builds` edges point from a job, DAG
or deployment to the dbt nodes it refreshes. Every edge says how it was inferred:

- `manifest`: a dbt dependency; `relation_match`: a dbt node and a warehouse table name the same relation;
- `sql_parse`: a tile's SQL reads the table (sqlglot); `explore_sql_table_name` / `source_table`: the BI tool says so;
- `selector`: a dbt command's --select/--exclude evaluated against the manifest; `asset_selection`: a Dagster job's
  assets; `config`: the `lineage.builders` mapping in ade.yaml; `object_dependencies`: Snowflake's view graph;
- `inventory`: a dashboard lists the tile;
- `openlineage`: a job's OpenLineage events name what it read (`reads`) and wrote (`writes`) (openlineage.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ade_platform.lib.lineage.openlineage import add_openlineage
from ade_platform.lib.lineage.relations import (
    RelationIndex,
    RelationKey,
    make_key,
    parse_relation,
    tables_in_sql,
)
from ade_platform.lib.lineage.selectors import DbtCommand, built_by, evaluate, parse_dbt_commands

LINEAGE_FORMAT = 1
RELATION_KINDS = {"model", "seed", "snapshot"}
DBT_NODE_KINDS = {"model", "seed", "snapshot", "source"}


@dataclass
class Builder:
    """A mapping from `lineage.builders` in ade.yaml: this job/DAG/deployment builds these dbt nodes."""

    system: str  # dbt_cloud | airflow | prefect | dagster | any name
    job: str
    select: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)


@dataclass
class WarehouseInfo:
    name: str
    type: str
    snapshot: dict[str, Any] | None = None  # warehouse_schema_<name>


@dataclass
class LineageInputs:
    index: dict[str, Any] | None = None  # dbt_lineage_index
    dbt_warehouse: str | None = None  # the warehouse dbt builds into
    warehouses: dict[str, WarehouseInfo] = field(default_factory=dict)
    bi: dict[str, dict[str, Any]] = field(default_factory=dict)  # tool -> bi_inventory_<tool>
    dbt_cloud_jobs: dict[str, Any] | None = None
    orchestrators: dict[str, dict[str, Any]] = field(default_factory=dict)  # backend -> runs asset
    snowflake_repository: dict[str, Any] | None = None
    builders: list[Builder] = field(default_factory=list)
    # source unique_id -> {loaded_at_field, warn_after_hours, error_after_hours} (from the manifest)
    source_freshness: dict[str, dict[str, Any]] = field(default_factory=dict)
    openlineage: dict[str, Any] | None = None  # openlineage_events
    openlineage_namespaces: dict[str, str] = field(default_factory=dict)  # dataset namespace -> warehouse


def table_id(warehouse: str, key: RelationKey) -> str:
    return f"warehouse:{warehouse}:table:{key.dotted}"


def dbt_id(unique_id: str) -> str:
    return f"dbt:{unique_id}"


class _Graph:
    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.unresolved: list[dict[str, Any]] = []

    def node(self, node_id: str, **attrs: Any) -> str:
        current = self.nodes.setdefault(node_id, {"id": node_id})
        for k, v in attrs.items():
            if v is not None and (k not in current or current[k] is None):
                current[k] = v
        return node_id

    def edge(self, src: str, dst: str, kind: str, how: str, **detail: Any) -> None:
        key = (src, dst, kind)
        if key not in self.edges:
            self.edges[key] = {"from": src, "to": dst, "kind": kind, "how": how, **detail}


def _dbt_relation(rec: dict[str, Any], wh_type: str | None) -> RelationKey | None:
    name = rec.get("alias") or rec.get("identifier") or rec.get("name")
    if rec.get("resource_type") == "source":
        name = rec.get("identifier") or rec.get("name")
    if not name or not rec.get("schema"):
        return None
    return make_key(rec.get("database"), rec.get("schema"), name, wh_type)


def _add_dbt(g: _Graph, inputs: LineageInputs, relations: dict[str, RelationIndex]) -> dict[str, str]:
    """dbt nodes, their dependencies and the tables they materialize or read. Returns relation dotted -> node."""
    index = inputs.index or {}
    nodes = index.get("nodes") or {}
    wh = inputs.warehouses.get(inputs.dbt_warehouse or "")
    wh_type = wh.type if wh else (index.get("adapter_type") or None)
    wh_name = inputs.dbt_warehouse or "dbt"
    rel_index = relations.setdefault(wh_name, RelationIndex(()))
    by_relation: dict[str, str] = {}
    tests_by_node = index.get("tests_by_node") or {}
    for uid, rec in nodes.items():
        rtype = rec.get("resource_type")
        if rtype not in DBT_NODE_KINDS and rtype != "exposure":
            continue
        g.node(
            dbt_id(uid),
            kind=rtype,
            name=rec.get("name"),
            system="dbt",
            unique_id=uid,
            tags=rec.get("tags") or None,
            materialization=rec.get("materialization"),
            path=rec.get("path"),
            freshness=inputs.source_freshness.get(uid),
            # the node's tests (unique_id -> name): its health joins their results without the dbt index
            tests={t: (nodes.get(t) or {}).get("name") or t for t in tests_by_node.get(uid, ())} or None,
        )
        key = _dbt_relation(rec, wh_type) if rtype in DBT_NODE_KINDS else None
        if key is None:
            continue
        rel_index.add(key)
        tid = g.node(
            table_id(wh_name, key), kind="table", name=key.dotted, system="warehouse", warehouse=wh_name
        )
        g.nodes[dbt_id(uid)]["relation"] = key.dotted
        by_relation[key.dotted] = dbt_id(uid)
        if rtype == "source":
            g.edge(tid, dbt_id(uid), "feeds", "relation_match")
        else:
            g.edge(dbt_id(uid), tid, "materializes", "relation_match")
    for uid, parents in (index.get("parents") or {}).items():
        if dbt_id(uid) not in g.nodes:
            continue
        for parent in parents:
            if dbt_id(parent) in g.nodes:
                g.edge(dbt_id(parent), dbt_id(uid), "feeds", "manifest")
    return by_relation


def _add_warehouses(g: _Graph, inputs: LineageInputs, relations: dict[str, RelationIndex]) -> None:
    for name, wh in inputs.warehouses.items():
        rel_index = relations.setdefault(name, RelationIndex(()))
        for table in (wh.snapshot or {}).get("tables") or []:
            key = make_key(table.get("database"), table.get("schema"), table.get("name") or "", wh.type)
            rel_index.add(key)
            g.node(
                table_id(name, key),
                kind="view" if table.get("table_type") == "VIEW" else "table",
                name=key.dotted,
                system="warehouse",
                warehouse=name,
                observed=True,
            )
            g.nodes[table_id(name, key)]["observed"] = True


def _bi_warehouse(inputs: LineageInputs) -> tuple[str | None, str | None]:
    name = inputs.dbt_warehouse or (next(iter(inputs.warehouses)) if inputs.warehouses else None)
    wh = inputs.warehouses.get(name or "")
    return name, wh.type if wh else None


def _defaults(inputs: LineageInputs, wh_name: str | None) -> tuple[str | None, str | None]:
    """The database and schema a tile's unqualified table name most likely means: the warehouse's only ones."""
    wh = inputs.warehouses.get(wh_name or "")
    tables = (wh.snapshot or {}).get("tables") if wh else None
    dbs = {(t.get("database") or "").lower() for t in tables or []}
    return (dbs.pop() or None) if len(dbs) == 1 else None, None


def _bi_node(g: _Graph, tool: str, kind: str, item: dict[str, Any], **facts: Any) -> str:
    """A dashboard or tile of a BI tool, named by its title and keyed by the tool's id for it."""
    return g.node(
        f"bi:{tool}:{kind}:{item.get('id')}", kind=kind, name=item.get("title"), system=tool, **facts
    )


def _add_bi(g: _Graph, inputs: LineageInputs, relations: dict[str, RelationIndex]) -> None:
    wh_name, wh_type = _bi_warehouse(inputs)
    rel_index = relations.get(wh_name or "") or RelationIndex(())
    default_db, default_schema = _defaults(inputs, wh_name)
    for tool, inventory in inputs.bi.items():
        for dash in inventory.get("dashboards") or []:
            did = _bi_node(g, tool, "dashboard", dash, dashboard_id=str(dash.get("id")), url=dash.get("url"))
            for el in dash.get("elements") or []:
                eid = _bi_node(
                    g,
                    tool,
                    "tile",
                    el,
                    tile_id=str(el.get("id")),
                    dashboard_id=str(dash.get("id")),
                    sql=el.get("sql"),
                    columns=list(el.get("columns") or []) or None,
                    explore=el.get("explore"),
                    model=el.get("model"),
                )
                g.edge(eid, did, "shown_on", "inventory")
                refs = _tile_tables(el, wh_type)
                for key, how in refs:
                    known = rel_index.resolve(key, default_db, default_schema)
                    target = known or key
                    tid = g.node(
                        table_id(wh_name or "warehouse", target),
                        kind="table",
                        name=target.dotted,
                        system="warehouse",
                        warehouse=wh_name,
                    )
                    g.edge(tid, eid, "reads", how)
                    if known is None:
                        g.unresolved.append(
                            {
                                "node": eid,
                                "what": f"table {key.dotted}",
                                "why": "not found in the warehouse or dbt",
                            }
                        )


def _tile_tables(el: dict[str, Any], wh_type: str | None) -> list[tuple[RelationKey, str]]:
    out: list[tuple[RelationKey, str]] = []
    for t in el.get("tables") or []:
        rel = t.get("relation") or ".".join(
            p for p in (t.get("database"), t.get("schema"), t.get("name")) if p
        )
        if rel:
            out.append((parse_relation(rel, wh_type), t.get("how") or "sql_parse"))
    if not out and el.get("sql"):
        out = [(key, "sql_parse") for key in tables_in_sql(el["sql"], wh_type)]
    return out


def _builds(g: _Graph, builder_id: str, uids: set[str], how: str, **detail: Any) -> int:
    count = 0
    for uid in sorted(uids):
        if dbt_id(uid) in g.nodes:
            g.edge(builder_id, dbt_id(uid), "builds", how, **detail)
            count += 1
    return count


def _add_commands(
    g: _Graph, builder_id: str, commands: list[DbtCommand], index: dict[str, Any], **detail: Any
) -> None:
    for command in commands:
        selection = built_by(command, index)
        _builds(g, builder_id, selection.nodes, "selector", command=command.text, **detail)
        for term in selection.unresolvable:
            g.unresolved.append(
                {"node": builder_id, "what": f"selector {term}", "why": "depends on run state"}
            )


def _add_dbt_cloud(g: _Graph, inputs: LineageInputs) -> None:
    index = inputs.index
    for job in (inputs.dbt_cloud_jobs or {}).get("jobs") or []:
        jid = g.node(
            f"dbt_cloud:job:{job.get('id')}",
            kind="job",
            name=job.get("name"),
            system="dbt_cloud",
            job_id=job.get("id"),
            tracked=job.get("tracked"),
        )
        if index:
            for step in job.get("execute_steps") or []:
                _add_commands(g, jid, parse_dbt_commands(step), index, step=step)


def _dbt_node_for_asset_key(index: dict[str, Any], key: str, names: dict[str, list[str]]) -> str | None:
    parts = [p for p in key.replace(".", "/").split("/") if p]
    if not parts:
        return None
    if len(parts) >= 2:
        source = f"source.{index.get('project_name')}.{parts[-2]}.{parts[-1]}"
        if source in index["nodes"]:
            return source
    candidates = names.get(parts[-1], [])
    return candidates[0] if len(candidates) == 1 else None


def _add_orchestrators(g: _Graph, inputs: LineageInputs) -> None:
    index = inputs.index
    names: dict[str, list[str]] = {}
    for uid, rec in ((index or {}).get("nodes") or {}).items():
        if rec.get("resource_type") in RELATION_KINDS:
            names.setdefault(rec.get("name") or "", []).append(uid)
    for backend, data in inputs.orchestrators.items():
        for dag in data.get("dags") or []:
            kind = "job" if backend == "dagster" else ("deployment" if backend == "prefect" else "dag")
            did = g.node(
                f"{backend}:{kind}:{dag.get('dag_id')}",
                kind=kind,
                name=dag.get("dag_id"),
                system=backend,
                dag_id=dag.get("dag_id"),
            )
            if not index:
                continue
            for task in dag.get("tasks") or []:
                if task.get("dbt_command"):
                    _add_commands(
                        g, did, parse_dbt_commands(task["dbt_command"]), index, task_id=task.get("task_id")
                    )
            uids = {u for k in dag.get("asset_keys") or [] if (u := _dbt_node_for_asset_key(index, k, names))}
            _builds(g, did, uids, "asset_selection")


def _add_config_builders(g: _Graph, inputs: LineageInputs) -> None:
    if not inputs.index:
        return
    for b in inputs.builders:
        kind = {"dbt_cloud": "job", "dagster": "job", "prefect": "deployment", "airflow": "dag"}.get(
            b.system, "job"
        )
        bid = f"{b.system}:{kind}:{b.job}"
        ref = {"job_id": b.job} if b.system == "dbt_cloud" else {"dag_id": b.job}
        g.node(bid, kind=kind, name=b.job, system=b.system, **ref)
        selection = evaluate(b.select, b.exclude, inputs.index)
        kept = {u for u in selection.nodes if inputs.index["nodes"][u].get("resource_type") in RELATION_KINDS}
        _builds(g, bid, kept, "config")
        for term in selection.unresolvable:
            g.unresolved.append({"node": bid, "what": f"selector {term}", "why": "depends on run state"})


def _add_snowflake(g: _Graph, inputs: LineageInputs, relations: dict[str, RelationIndex]) -> None:
    repo = inputs.snowflake_repository
    if not repo:
        return
    snow_wh = next((n for n, w in inputs.warehouses.items() if w.type == "snowflake"), None)
    rel_index = relations.get(snow_wh or "") if snow_wh else None
    for obj in repo.get("objects") or []:
        key = make_key(obj.get("database"), obj.get("schema"), obj.get("name") or "", "snowflake")
        oid = g.node(
            f"snowflake:{(obj.get('type') or 'object').lower()}:{key.dotted}",
            kind=(obj.get("type") or "object").lower(),
            name=key.dotted,
            system="snowflake",
        )
        if rel_index is not None and key in rel_index:
            g.edge(oid, table_id(snow_wh or "", key), "same_object", "relation_match")
    kinds = {
        make_key(*(o.get("key") or "..").split(".")[:3], "snowflake").dotted: (
            o.get("type") or "object"
        ).lower()
        for o in repo.get("objects") or []
        if len((o.get("key") or "").split(".")) == 3
    }
    for dep in repo.get("dependencies") or []:
        a, b = (parse_relation(str(dep.get(k) or ""), "snowflake").dotted for k in ("from", "to"))
        if a in kinds and b in kinds:
            g.edge(f"snowflake:{kinds[a]}:{a}", f"snowflake:{kinds[b]}:{b}", "feeds", "object_dependencies")


def build_lineage(inputs: LineageInputs) -> dict[str, Any]:
    """The cross-stack graph as plain JSON for the store."""
    g = _Graph()
    relations: dict[str, RelationIndex] = {}
    _add_warehouses(g, inputs, relations)
    _add_dbt(g, inputs, relations)
    _add_snowflake(g, inputs, relations)
    _add_bi(g, inputs, relations)
    _add_dbt_cloud(g, inputs)
    _add_orchestrators(g, inputs)
    _add_config_builders(g, inputs)
    warehouse_types = {name: wh.type for name, wh in inputs.warehouses.items()}
    columns = add_openlineage(
        g, inputs.openlineage, relations, warehouse_types, inputs.openlineage_namespaces
    )
    edges = sorted(g.edges.values(), key=lambda e: (e["from"], e["to"], e["kind"]))
    counts: dict[str, int] = {}
    for n in g.nodes.values():
        counts[f"{n.get('system')}:{n.get('kind')}"] = counts.get(f"{n.get('system')}:{n.get('kind')}", 0) + 1
    hows: dict[str, int] = {}
    for e in edges:
        hows[e["how"]] = hows.get(e["how"], 0) + 1
    return {
        "format": LINEAGE_FORMAT,
        "nodes": sorted(g.nodes.values(), key=lambda n: n["id"]),
        "edges": edges,
        "unresolved": g.unresolved,
        **({"column_edges": columns} if columns else {}),
        "stats": {"nodes": len(g.nodes), "edges": len(edges), "node_counts": counts, "edges_by_how": hows},
    }
