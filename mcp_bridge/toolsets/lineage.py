"""lineage: one question across the stack — which tables a tile reads, which dbt models build them, from which
sources, which job or DAG runs each, and how every hop is doing right now (the spec's Gap 1).

The graph comes from the `cross_stack_lineage` asset; health comes from the newest run-level snapshots (dbt run
results and freshness, drift, BI health, job and DAG runs) at answer time, so a failed build is visible on the
first call after it. The provenance lists every asset joined.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from pydantic import BaseModel, Field

from ade_platform.lib.lineage import incident
from ade_platform.lib.lineage.sources import LINEAGE_ASSET, Topology, health_inputs, table_columns
from ade_platform.lib.lineage.trace import (
    Health,
    LineageLookupError,
    builders_of,
    find_start,
    status_of,
    views,
    walk,
)
from ade_platform.store import SnapshotNotFound, StoreError
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.tool_schemas import DeferredSchema
from mcp_bridge.toolsets._dbt_inputs import as_result, derive
from mcp_bridge.toolsets.base import READ_ONLY, new_toolset

StartKind = Annotated[
    Literal["dashboard", "tile", "table", "dbt_node", "job"],
    Field(
        description="What `start` names: a BI dashboard or tile (id or title), a warehouse table ([db.]schema.name "
        "or name), a dbt node (unique_id or name), or a job/DAG/deployment (dbt Cloud job id, DAG id, "
        "flow/deployment, Dagster job name)."
    ),
]
Start = Annotated[
    str, Field(min_length=1, max_length=1024, description="The id or name of the start node, or a node id.")
]
System = Annotated[
    str | None,
    Field(
        max_length=64,
        description="Narrow the start to one system: looker or metabase for BI, dbt_cloud, airflow, prefect or "
        "dagster for jobs.",
    ),
]


class JoinedAsset(BaseModel):
    asset: str
    version: str
    materialized_at: str
    age_seconds: float


class Provenance(BaseModel):
    asset: str
    version: str
    materialized_at: str
    age_seconds: float
    run_id: str | None
    source: Literal["cache"]
    stale: bool
    stale_reason: str | None
    joined: list[JoinedAsset] = Field(
        description="Every run-level asset whose newest snapshot gave the health."
    )


class TraceNode(BaseModel):
    id: str = Field(description="<system>:<kind>:<key>")
    kind: str
    name: str | None
    system: str | None
    direction: Literal["start", "upstream", "downstream", "built"]
    depth: int
    status: Literal["ok", "warn", "failed", "stale", "drifted", "unknown"]
    health: dict[str, Any] | None
    built_by: list[dict[str, Any]] = Field(
        description="Jobs/DAGs that build this dbt node, and how that was inferred."
    )


class TraceEdge(BaseModel):
    from_: str = Field(alias="from")
    to: str
    kind: str = Field(description="feeds, materializes, reads, shown_on, same_object, builds")
    how: str = Field(description="manifest, relation_match, sql_parse, explore_sql_table_name, selector, ...")


class TraceAnswer(BaseModel):
    start: str
    direction: str
    nodes: list[TraceNode]
    edges: list[TraceEdge]
    total_nodes: int
    truncated: bool
    unresolved: list[dict[str, Any]] = Field(description="What could not be linked on this chain, and why.")
    provenance: Provenance


class Cause(BaseModel):
    rank: int
    cause: Literal[
        "tile_references_missing_column",
        "failed_model",
        "schema_drift",
        "stale_source",
        "failed_builder_run",
        "failing_tests",
        "skipped_model",
    ]
    node: str
    name: str | None
    system: str | None
    hops_from_symptom: int
    score: float
    summary: str
    evidence: dict[str, Any]
    next_tool: dict[str, Any] = Field(description="The tool (and arguments) that confirms this cause.")


class IncidentAnswer(BaseModel):
    symptom: dict[str, Any]
    causes: list[Cause]
    verdict: str
    chain_nodes: int
    truncated: bool
    provenance: Provenance


def _schema(model: type[BaseModel]) -> DeferredSchema:
    return DeferredSchema(lambda: model.model_json_schema(by_alias=True))


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset(
        "lineage",
        "Cross-stack lineage: dashboard tile -> warehouse table -> dbt model -> source, and the dbt Cloud job, "
        "Airflow DAG, Prefect deployment or Dagster job that builds each model, with each hop's latest health.",
    )
    settings = ctx.settings
    topology = Topology(
        warehouses={name: wh.type for name, wh in settings.warehouses.items()},
        dbt_warehouse=settings.dbt.warehouse if settings.dbt is not None else None,
    )
    default_cap = settings.lineage.max_nodes

    def read(asset: str) -> tuple[Any, str] | None:
        try:
            snap = ctx.reader.latest(asset)
        except SnapshotNotFound:
            return None
        return snap.data, snap.version

    # Health and column lookups are indexed once per set of snapshot versions (a new run moves a version).
    memo: dict[tuple[str, Any], Any] = {}

    def health_now() -> tuple[Health, dict[str, str]]:
        hin, joined = health_inputs(read, topology)
        key = ("health", tuple(sorted(joined.items())))
        if key not in memo:
            memo.clear()
            memo[key] = Health(hin)
        return memo[key], joined

    def columns_now(lineage: dict[str, Any], version: str) -> dict[str, set[str]]:
        key = ("columns", version)
        if key not in memo:
            memo[key] = table_columns(read, topology, lineage)
        return memo[key]

    def graph() -> tuple[Any, dict[str, Any], dict[str, Any]]:
        snapshot = ctx.reader.latest(LINEAGE_ASSET)
        data = snapshot.data
        return snapshot, data, derive(snapshot, "lineage_views", lambda _s: views(data))

    def provenance(snapshot: Any, lineage: dict[str, Any], joined: dict[str, str]) -> dict[str, Any]:
        moved = []
        for asset, version in (lineage.get("inputs") or {}).items():
            try:
                if ctx.reader.latest(asset).version != version:
                    moved.append(asset)
            except StoreError:
                continue
        reason = (
            f"newer versions of {', '.join(sorted(moved))} exist than the graph was built from"
            if moved
            else None
        )
        stamped = ctx.cached_answer(snapshot, {}, stale_reason=reason)["provenance"]
        stamped["joined"] = []
        for asset in sorted(joined):
            p = ctx.reader.provenance(asset, joined[asset]).stamp()
            stamped["joined"].append(
                {k: p[k] for k in ("asset", "version", "materialized_at", "age_seconds")}
            )
        return stamped

    def start_of(v: dict[str, Any], kind: str, start: str, system: str | None) -> str:
        try:
            return find_start(v, kind, start, system)  # type: ignore[arg-type]
        except LineageLookupError as exc:
            detail = str(exc) + (f"; candidates: {', '.join(exc.candidates)}" if exc.candidates else "")
            raise ToolFailure(exc.code, detail) from None

    @server.tool(annotations=READ_ONLY, output_schema=_schema(TraceAnswer))
    def lineage_trace(
        start_kind: StartKind,
        start: Start,
        system: System = None,
        direction: Annotated[
            Literal["upstream", "downstream", "both"],
            Field(description="upstream: toward the sources; downstream: toward the dashboards; both."),
        ] = "both",
        depth: Annotated[
            int | None, Field(ge=1, le=100, description="Hops each way; null = no limit.")
        ] = None,
        max_nodes: Annotated[
            int | None, Field(ge=1, le=5000, description="Node cap (default lineage.max_nodes, 300).")
        ] = None,
    ) -> ToolResult:
        """The chain across systems from a dashboard, tile, table, dbt node or job: BI tiles, the warehouse
        tables they read, the dbt models that build those tables and their sources, plus the job or DAG that
        builds each model — every hop with its latest health (dbt run status and tests, source freshness,
        drift, the builder's last run, the tile's health) and every edge with how it was inferred.

        Bounded by depth and a node cap (`truncated: true` when cut). Start from a job to see what it builds.
        """
        snapshot, lineage, v = graph()
        root = start_of(v, start_kind, start, system)
        w = walk(v, root, direction, depth, max_nodes or default_cap)
        health, joined = health_now()
        nodes = []
        for node_id, where in w.nodes.items():
            node = v["nodes"][node_id]
            h = health.of(node)
            nodes.append(
                {
                    "id": node_id,
                    "kind": node.get("kind"),
                    "name": node.get("name"),
                    "system": node.get("system"),
                    "direction": where["direction"],
                    "depth": where["depth"],
                    "status": status_of(h),
                    "health": h,
                    "built_by": builders_of(v, node_id),
                }
            )
        unresolved = [u for u in lineage.get("unresolved") or [] if u.get("node") in w.nodes]
        body = {
            "start": root,
            "direction": direction,
            "nodes": nodes,
            "edges": w.edges,
            "total_nodes": len(nodes),
            "truncated": w.truncated,
            "unresolved": unresolved,
        }
        return as_result({**body, "provenance": provenance(snapshot, lineage, joined)})

    @server.tool(annotations=READ_ONLY, output_schema=_schema(IncidentAnswer))
    def lineage_explain_incident(start_kind: StartKind, start: Start, system: System = None) -> ToolResult:
        """For a broken or stale dashboard, tile, table or model: the likely root causes along its upstream
        chain, ranked, each with its evidence and the tool to call next to confirm it — a failed upstream
        model (and what it skipped), drift on a table it reads, a tile whose SQL names a column its table does
        not have, a stale source, failing tests, a failed run of the job or DAG that builds a model.
        """
        snapshot, lineage, v = graph()
        root = start_of(v, start_kind, start, system)
        health, joined = health_now()
        cols = columns_now(lineage, snapshot.version)
        wh = settings.warehouses.get(topology.dbt_warehouse or "")
        body = incident.explain(v, health, root, cols, wh.type if wh else None)
        return as_result({**body, "provenance": provenance(snapshot, lineage, joined)})

    return server
