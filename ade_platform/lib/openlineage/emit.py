"""What ADE knows, as OpenLineage events made with the official client (openlineage-python), and sent through its
transports (`openlineage.emit.transport` in ade.yaml: http, file, kafka, ... as the client configures them).

- `graph_events`: the cross-stack graph as static lineage (JobEvents): each dbt model, seed and snapshot reads the
  tables of its parents and writes its own; each BI tile reads its tables; each job OpenLineage told of reads and
  writes what it did, with the facets it came with (column lineage included), so events in come out the same.
- `run_events`: a run of ADE's (a materialization, an audited live call): START, then COMPLETE or FAIL with an
  errorMessage facet.
- `verdict_event`: lineage_explain_incident's verdict as the custom run facet `ade_rootCause`, whose JSON schema
  is docs/openlineage/ADERootCauseRunFacet.json (`_schemaURL` points at it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import attr
from openlineage.client.event_v2 import InputDataset, Job, JobEvent, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import RunFacet, column_lineage_dataset, documentation_job, error_message_run
from openlineage.client.serde import Serde

from ade_platform.config import OpenLineageEmit

ROOT_CAUSE_FACET = "ade_rootCause"
SCHEMA_FILE = "docs/openlineage/ADERootCauseRunFacet.json"
MAX_CAUSES = 10
_JOB_KINDS = {"model", "seed", "snapshot"}


def schema_url(emit: OpenLineageEmit) -> str:
    base = emit.facet_schema_url or f"{emit.producer.rstrip('/')}/raw/main/{SCHEMA_FILE}"
    return f"{base}#/$defs/ADERootCauseRunFacet"


@attr.define
class RootCauseRunFacet(RunFacet):
    """ade_rootCause: the verdict, its confidence, the symptom and the ranked causes."""

    verdict: str
    confidence: str
    symptom: dict[str, Any]
    causes: list[dict[str, Any]]


def _now() -> str:
    return datetime.now(UTC).isoformat()


class _Names:
    """The dataset (namespace, name) of a graph node, as ADE sends it."""

    def __init__(self, lineage: dict[str, Any], emit: OpenLineageEmit):
        topology = lineage.get("topology") or {}
        self.types: dict[str, str] = dict(topology.get("warehouses") or {})
        self.emit = emit

    def namespace(self, warehouse: str) -> str:
        if warehouse in self.emit.namespaces:
            return self.emit.namespaces[warehouse]
        kind = self.types.get(warehouse, "warehouse")
        return "bigquery" if kind == "bigquery" else f"{kind}://{warehouse}"

    def of(self, node: dict[str, Any]) -> tuple[str, str] | None:
        if node.get("system") == "warehouse":
            return self.namespace(str(node.get("warehouse"))), str(node.get("name"))
        if node.get("kind") == "dataset" and node.get("namespace"):
            return str(node["namespace"]), str(node.get("name"))
        return None


def _column_facets(
    lineage: dict[str, Any], names: _Names, nodes: dict[str, Any]
) -> dict[tuple[str, str], Any]:
    """(job node, output node) -> the columnLineage facet the graph's column edges make."""
    fields: dict[tuple[str, str], dict[str, list[Any]]] = {}
    for edge in lineage.get("column_edges") or []:
        source = names.of(nodes.get(edge["from"], {}))
        if source is None or not edge.get("to_column"):
            continue
        field = column_lineage_dataset.InputField(
            namespace=source[0], name=source[1], field=edge.get("from_column") or ""
        )
        fields.setdefault((edge.get("job") or "", edge["to"]), {}).setdefault(edge["to_column"], []).append(
            field
        )
    return {
        key: column_lineage_dataset.ColumnLineageDatasetFacet(
            fields={c: column_lineage_dataset.Fields(inputFields=inputs) for c, inputs in columns.items()}
        )
        for key, columns in fields.items()
    }


def graph_events(
    lineage: dict[str, Any], emit: OpenLineageEmit, event_time: str | None = None
) -> list[JobEvent]:
    """The cross-stack graph as static lineage, one JobEvent per job-like node."""
    when = event_time or _now()
    nodes = {n["id"]: n for n in lineage.get("nodes") or []}
    names = _Names(lineage, emit)
    up: dict[str, list[dict[str, Any]]] = {}
    down: dict[str, list[dict[str, Any]]] = {}
    for e in lineage.get("edges") or []:
        up.setdefault(e["to"], []).append(e)
        down.setdefault(e["from"], []).append(e)
    columns = _column_facets(lineage, names, nodes)

    def table_of(dbt_node: str) -> str | None:
        made = [e["to"] for e in down.get(dbt_node, ()) if e["kind"] == "materializes"]
        fed = [
            e["from"]
            for e in up.get(dbt_node, ())
            if e["kind"] == "feeds" and nodes.get(e["from"], {}).get("system") == "warehouse"
        ]
        return (made or fed or [None])[0]

    def dataset(cls: Any, node_id: str | None, edge: dict[str, Any] | None = None, job: str = "") -> Any:
        named = (edge or {}).get("dataset")
        found = (named["namespace"], named["name"]) if named else names.of(nodes.get(node_id or "", {}))
        if found is None:
            return None
        facets = dict((edge or {}).get("facets") or {})
        extra = facets.pop("inputFacets" if cls is InputDataset else "outputFacets", None)
        if (
            job,
            node_id,
        ) in columns and "columnLineage" not in facets:  # a producer's own facet goes out as sent
            facets["columnLineage"] = columns[(job, node_id)]
        side = {"inputFacets": extra} if cls is InputDataset else {"outputFacets": extra}
        return cls(namespace=found[0], name=found[1], facets=facets, **{k: v for k, v in side.items() if v})

    events: list[JobEvent] = []
    for node_id, node in sorted(nodes.items()):
        system, kind = node.get("system"), node.get("kind")
        if system == "openlineage" and kind == "job":
            ins = [dataset(InputDataset, e["from"], e) for e in up.get(node_id, ()) if e["kind"] == "reads"]
            outs = [
                dataset(OutputDataset, e["to"], e, node_id)
                for e in down.get(node_id, ())
                if e["kind"] == "writes"
            ]
            job = Job(
                namespace=str(node.get("namespace")),
                name=str(node.get("name")),
                facets=dict(node.get("facets") or {}),
            )
        elif system == "dbt" and kind in _JOB_KINDS:
            parents = [
                e["from"] for e in up.get(node_id, ()) if e["kind"] == "feeds" and e.get("how") == "manifest"
            ]
            ins = [dataset(InputDataset, table_of(p)) for p in parents]
            outs = [dataset(OutputDataset, table_of(node_id))]
            job = _job(emit, f"dbt.{node.get('unique_id')}", f"dbt {kind} {node.get('name')}")
        elif kind == "tile":
            ins = [dataset(InputDataset, e["from"]) for e in up.get(node_id, ()) if e["kind"] == "reads"]
            outs = []
            job = _job(emit, f"{system}.tile.{node.get('tile_id')}", f"{system} tile {node.get('name')}")
        else:
            continue
        events.append(
            JobEvent(
                eventTime=when,
                producer=emit.producer,
                job=job,
                inputs=[d for d in ins if d is not None],
                outputs=[d for d in outs if d is not None],
            )
        )
    return events


def _job(emit: OpenLineageEmit, name: str, description: str) -> Job:
    doc = documentation_job.DocumentationJobFacet(description=description, producer=emit.producer)
    return Job(namespace=emit.namespace, name=name, facets={"documentation": doc})


def run_events(
    emit: OpenLineageEmit,
    job: str,
    run_id: str,
    started_at: str,
    ended_at: str | None,
    failed: bool,
    error: str | None = None,
) -> list[RunEvent]:
    """A run of ADE's: START, and COMPLETE or FAIL when it ended (run ids that are not UUIDs are hashed into one)."""
    try:
        rid = str(uuid.UUID(run_id))
    except ValueError:
        rid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"ade:{run_id}"))
    the_job = Job(namespace=emit.namespace, name=job)
    out = [
        RunEvent(
            eventType=RunState.START,
            eventTime=started_at,
            run=Run(runId=rid),
            job=the_job,
            producer=emit.producer,
        )
    ]
    if ended_at is not None:
        facets: dict[str, Any] = {}
        if failed:
            facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
                message=(error or "failed")[:2000], programmingLanguage="python", producer=emit.producer
            )
        state = RunState.FAIL if failed else RunState.COMPLETE
        out.append(
            RunEvent(
                eventType=state,
                eventTime=ended_at,
                run=Run(runId=rid, facets=facets),
                job=the_job,
                producer=emit.producer,
            )
        )
    return out


def verdict_event(answer: dict[str, Any], lineage: dict[str, Any], emit: OpenLineageEmit) -> RunEvent:
    """lineage_explain_incident's answer as a RunEvent of job `lineage_explain_incident` carrying ade_rootCause;
    its input is the symptom's dataset when the symptom is one."""
    nodes = {n["id"]: n for n in lineage.get("nodes") or []}
    names = _Names(lineage, emit)
    symptom = answer.get("symptom") or {}
    causes = []
    for i, cause in enumerate((answer.get("causes") or [])[:MAX_CAUSES]):
        entry: dict[str, Any] = {
            "rank": int(cause.get("rank") or i + 1),
            "cause": str(cause.get("cause")),
            "node": str(cause.get("node")),
        }
        if cause.get("summary"):
            entry["summary"] = str(cause["summary"])
        found = names.of(nodes.get(entry["node"], {}))
        if found:
            entry["dataset"] = {"namespace": found[0], "name": found[1]}
        causes.append(entry)
    facet = RootCauseRunFacet(
        verdict=str(answer.get("verdict") or ""),
        confidence=str(answer.get("confidence") or "none"),
        symptom={k: str(symptom[k]) for k in ("node", "name", "status") if symptom.get(k) is not None},
        causes=causes,
        producer=emit.producer,
    )
    facet._schemaURL = schema_url(emit)  # where ADE publishes it (its class would name the base RunFacet's)
    found = names.of(nodes.get(str(symptom.get("node")), {}))
    inputs = [InputDataset(namespace=found[0], name=found[1])] if found else []
    return RunEvent(
        eventType=RunState.COMPLETE,
        eventTime=_now(),
        run=Run(runId=str(uuid.uuid4()), facets={ROOT_CAUSE_FACET: facet}),
        job=Job(namespace=emit.namespace, name="lineage_explain_incident"),
        inputs=inputs,
        producer=emit.producer,
    )


def as_dict(event: Any) -> dict[str, Any]:
    """An event as it goes on the wire (the client's own serializer)."""
    return Serde.to_dict(event)


def send(emit: OpenLineageEmit, events: Iterable[Any]) -> int:
    """Send through the configured transport; returns how many went. Nothing is sent without a transport."""
    if not emit.transport:
        return 0
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport import get_default_factory

    # the factory with the client's transports registered (http, file, kafka, console, composite, ...)
    client = OpenLineageClient(transport=get_default_factory().create(dict(emit.transport)))
    count = 0
    for event in events:
        client.emit(event)
        count += 1
    return count
