"""OpenLineage jobs joined into the cross-stack graph (the `openlineage_events` snapshot, lib/openlineage/).

A dataset an event names becomes the warehouse table node it denotes (its namespace and name read per the naming
spec, matched to a configured warehouse by type, or by `openlineage.receive.namespaces`, then to the table or dbt
relation the graph already knows), or a node of its own for files and unconfigured systems. Each job is a builder
node `openlineage:job:<namespace>/<name>` (its producer's system on it: airflow, spark, dbt, ...): its inputs
`reads` into it and it `writes` its outputs, edges whose `how` is `openlineage` and which keep the dataset's facets
as the job saw them. A columnLineage facet becomes column edges (`column_edges` of the graph).
"""

from __future__ import annotations

from typing import Any, Protocol

from ade_platform.lib.lineage.relations import RelationIndex, RelationKey
from ade_platform.lib.openlineage.naming import dataset_node_id, job_node_id, read_dataset

HOW = "openlineage"
MAX_COLUMN_EDGES = 20_000


class GraphLike(Protocol):
    nodes: dict[str, dict[str, Any]]
    unresolved: list[dict[str, Any]]

    def node(self, node_id: str, **attrs: Any) -> str: ...

    def edge(self, src: str, dst: str, kind: str, how: str, **detail: Any) -> None: ...


class _Datasets:
    """Finds the node a dataset denotes, creating it when the graph does not have it yet."""

    def __init__(
        self,
        g: GraphLike,
        relations: dict[str, RelationIndex],
        warehouses: dict[str, str],
        namespaces: dict[str, str],
    ):
        self.g, self.relations, self.warehouses, self.namespaces = g, relations, warehouses, namespaces

    def _resolve(self, wh: str, key: RelationKey) -> RelationKey | None:
        index = self.relations.get(wh)
        if index is None:
            return None
        return index.resolve(key) or (
            index.resolve(RelationKey(None, key.schema, key.name)) if key.database else None
        )

    def node(self, namespace: str, name: str) -> str:
        ds = read_dataset(namespace, name)
        if ds.key is not None:
            mapped = self.namespaces.get(namespace)
            candidates = (
                [mapped] if mapped else [w for w, t in self.warehouses.items() if t == ds.warehouse_type]
            )
            found = [(w, k) for w in candidates if (k := self._resolve(w, ds.key)) is not None]
            if len(found) == 1 or (not found and len(candidates) == 1):
                wh, key = found[0] if found else (candidates[0], ds.key)
                return self.g.node(
                    f"warehouse:{wh}:table:{key.dotted}",
                    kind="table",
                    name=key.dotted,
                    system="warehouse",
                    warehouse=wh,
                )
        return self.g.node(
            dataset_node_id(namespace, name),
            kind="dataset",
            name=name,
            system="openlineage",
            namespace=namespace,
            scheme=ds.scheme or None,
        )


def _named(entry: dict[str, Any]) -> dict[str, str]:
    """The dataset as the producer named it (kept on the edge, so what ADE sends out names it the same way)."""
    return {"namespace": entry["namespace"], "name": entry["name"]}


def _facets(entry: dict[str, Any]) -> dict[str, Any]:
    out = dict(entry.get("facets") or {})
    for extra in ("inputFacets", "outputFacets"):
        if entry.get(extra):
            out[extra] = entry[extra]
    return out


def add_openlineage(
    g: GraphLike,
    state: dict[str, Any] | None,
    relations: dict[str, RelationIndex],
    warehouses: dict[str, str],
    namespaces: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Add the jobs and datasets of an `openlineage_events` snapshot; returns the column edges."""
    if not state:
        return []
    datasets = _Datasets(g, relations, warehouses, namespaces or {})
    columns: list[dict[str, Any]] = []
    for job in state.get("jobs") or []:
        jid = g.node(
            job_node_id(job["namespace"], job["name"]),
            kind="job",
            name=job["name"],
            system="openlineage",
            namespace=job["namespace"],
            producer=job.get("producer"),
            runs_on=job.get("system"),
            parent=job.get("parent"),
            facets=job.get("facets") or None,
        )
        for entry in job.get("inputs") or []:
            did = datasets.node(entry["namespace"], entry["name"])
            g.edge(did, jid, "reads", HOW, dataset=_named(entry), facets=_facets(entry) or None)
        for entry in job.get("outputs") or []:
            did = datasets.node(entry["namespace"], entry["name"])
            g.edge(jid, did, "writes", HOW, dataset=_named(entry), facets=_facets(entry) or None)
            columns += _column_edges(datasets, did, jid, entry)
    for entry in state.get("datasets") or []:
        did = datasets.node(entry["namespace"], entry["name"])
        g.nodes[did].setdefault("facets", entry.get("facets") or None)
    return columns[:MAX_COLUMN_EDGES]


def _column_edges(datasets: _Datasets, did: str, jid: str, entry: dict[str, Any]) -> list[dict[str, Any]]:
    facet = (entry.get("facets") or {}).get("columnLineage")
    fields = facet.get("fields") if isinstance(facet, dict) else None
    if not isinstance(fields, dict):
        return []
    out = []
    for column, spec in fields.items():
        if not isinstance(spec, dict):
            continue
        for source in spec.get("inputFields") or []:
            if not isinstance(source, dict) or not source.get("namespace") or not source.get("name"):
                continue
            kinds = [
                t.get("type")
                for t in source.get("transformations") or []
                if isinstance(t, dict) and t.get("type")
            ]
            out.append(
                {
                    "from": datasets.node(source["namespace"], source["name"]),
                    "from_column": source.get("field"),
                    "to": did,
                    "to_column": column,
                    "how": HOW,
                    "job": jid,
                    "transformation": kinds[0] if kinds else spec.get("transformationType"),
                }
            )
    return out


def job_runs(state: dict[str, Any] | None) -> dict[str, list[dict[str, Any]]]:
    """Builder node -> its runs, newest first, in the shape the hop health reads for any job."""
    out: dict[str, list[dict[str, Any]]] = {}
    for job in (state or {}).get("jobs") or []:
        out[job_node_id(job["namespace"], job["name"])] = [
            {
                "run_id": run["run_id"],
                "status": run.get("status"),
                "state": run.get("state"),
                "started_at": run.get("started_at"),
                "finished_at": run.get("ended_at"),
                "message": run.get("error"),
            }
            for run in job.get("runs") or []
        ]
    return out
