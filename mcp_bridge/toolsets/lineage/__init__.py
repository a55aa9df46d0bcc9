"""lineage: one question across the stack — which tables a tile reads, which dbt models build them, from which
sources, which job or DAG runs each, how every hop is doing, and what broke (the spec's Gap 1).

The graph comes from the `cross_stack_lineage` asset (an adjacency index memoized per version). lineage_trace
stamps each hop with health from the newest run-level snapshots. lineage_explain_incident and
lineage_what_changed start from the symptom as it is now: they probe it and the hops nearest to it live, within
`lineage.live_budget_ms`, as one audited read-only run, and fall back to the snapshots for what the budget did
not reach, saying so; onsets come from the snapshot history.
"""

from __future__ import annotations

import time
from typing import Annotated, Any, Literal

from fastmcp import FastMCP
from fastmcp.tools import ToolResult
from pydantic import Field

from ade_platform.lib import paging
from ade_platform.lib.lineage import incident
from ade_platform.lib.lineage.conditions import iso
from ade_platform.lib.lineage.evidence import LiveFindings
from ade_platform.lib.lineage.timeline import Timeline, chain_files, page
from ade_platform.lib.lineage.trace import (
    LineageLookupError,
    builders_of,
    find_start,
    status_of,
    walk,
)
from ade_platform.store import SnapshotNotFound
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets._dbt_inputs import as_result
from mcp_bridge.toolsets.base import READ_ONLY, READ_ONLY_OPEN_WORLD, new_toolset
from mcp_bridge.toolsets.lineage.live import OBSERVATION_REUSE_SECONDS, LiveProber
from mcp_bridge.toolsets.lineage.records import LineageStore, topology_of
from mcp_bridge.toolsets.schemas.batch import deferred_schemas_of
from mcp_bridge.toolsets.schemas.lineage import IncidentAnswer, TraceAnswer, WhatChangedAnswer
from mcp_bridge.toolsets.schemas.paging import Cursor, Detail, GraphLimit, Until

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
Live = Annotated[
    bool,
    Field(
        description="Probe the symptom and the nearest hops live (within lineage.live_budget_ms, as one audited "
        "read-only run); false: answer from the snapshots only."
    ),
]


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset(
        "lineage",
        "Cross-stack lineage: dashboard tile -> warehouse table -> dbt model -> source, and the dbt Cloud job, "
        "Airflow DAG, Prefect deployment or Dagster job that builds each model, with each hop's latest health; "
        "the ranked root cause of an incident and what changed along the chain.",
    )
    published = deferred_schemas_of(TraceAnswer, IncidentAnswer, WhatChangedAnswer)
    settings = ctx.settings
    store = LineageStore(ctx, topology_of(settings))
    prober = LiveProber(settings)
    default_cap = settings.lineage.max_nodes
    budget_ms = settings.lineage.live_budget_ms
    wh = settings.warehouses.get(store.topology.dbt_warehouse or "")
    dialect = wh.type if wh else None

    def start_of(v: dict[str, Any], kind: str, start: str, system: str | None) -> str:
        try:
            return find_start(v, kind, start, system)  # type: ignore[arg-type]
        except LineageLookupError as exc:
            detail = str(exc) + (f"; candidates: {', '.join(exc.candidates)}" if exc.candidates else "")
            raise ToolFailure(exc.code, detail) from None

    def observed_symptom(node: dict[str, Any]) -> dict[str, Any] | None:
        """A tile health another live tool recorded seconds ago: the symptom now, without running it again."""
        if node.get("kind") != "tile":
            return None
        key = f"{node.get('system')}:dashboard/{node.get('dashboard_id')}/tile/{node.get('tile_id')}"
        found = store.latest_observation("bi_tile_health", key)
        if found is None or time.time() - found.observed_at > OBSERVATION_REUSE_SECONDS:
            return None
        state = dict(found.state or {})
        return {**state, "observed_at": found.observed_at, "via": f"observation by {found.source}"}

    def probe_live(
        tool: str, arguments: dict[str, Any], v: dict[str, Any], root: str, symptom: bool = True
    ) -> tuple[LiveFindings, Any, list[Any]]:
        """The symptom (unless told not to) and the chain, probed live as one audited read-only run."""
        chain = walk(v, root, "upstream", None, default_cap)
        try:
            run_results = ctx.reader.latest("dbt_run_results").provenance
        except SnapshotNotFound:
            run_results = None
        reused = observed_symptom(v["nodes"][root]) if symptom else None
        probes = prober.plan(v, root, chain, run_results, reused, symptom=symptom)

        def run() -> tuple[LiveFindings, list[Any]]:
            return prober.probe(probes, budget_ms, time.time())

        result = ctx.live().run(tool, run, arguments=arguments, effects="none")
        findings, observed = result.value
        if reused is not None:
            findings.symptom = reused
        return findings, result, observed

    def record(tool: str, observed: list[Any]) -> None:
        """What was read now updates the shared picture (written in the background): after the answer is
        built, so the answer's own history never holds what this very call observed."""
        for found in observed:
            ctx.observe(found.kind, found.key, found.state, source=tool, asset=found.asset)

    def stamp_live(prov: dict[str, Any], result: Any, findings: LiveFindings) -> dict[str, Any]:
        prov["source"] = "live"
        prov["live"] = {
            "run_id": result.run_id,
            "elapsed_ms": round(findings.elapsed_ms, 1),
            "budget_ms": budget_ms,
        }
        return prov

    @server.tool(annotations=READ_ONLY, output_schema=published[TraceAnswer])
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
        limit: GraphLimit = None,
        cursor: Cursor = None,
        detail: Detail = "full",
    ) -> ToolResult:
        """The chain across systems from a dashboard, tile, table, dbt node or job: BI tiles, the warehouse
        tables they read, the dbt models that build those tables and their sources, plus the job or DAG that
        builds each model — every hop with its latest health (dbt run status and tests, source freshness,
        drift, the builder's last run, the tile's health) and every edge with how it was inferred.

        Bounded by depth and a node cap (`truncated: true` when cut). Nodes are paged nearest first, each page
        with its edges and unresolved links (limit, default the node cap; cursor -> next_cursor;
        docs/PAGING.md). detail=summary answers only `summary` (nodes per depth and per kind), no health read.
        Start from a job to see what it builds.
        """
        snapshot, lineage, v = store.graph()
        root = start_of(v, start_kind, start, system)
        cap = max_nodes or default_cap
        w = walk(v, root, direction, depth, cap)
        walked = [
            {"id": node_id, "kind": v["nodes"][node_id].get("kind"), "depth": where["depth"]}
            for node_id, where in w.nodes.items()
        ]
        head = {"start": root, "direction": direction, "total_nodes": len(walked)}
        if detail == "summary":
            summary = paging.graph_summary(walked, w.edges, kind_key="kind")
            body = {**head, "nodes": [], "edges": [], "unresolved": [], "summary": summary,
                    "truncated": w.truncated, "next_cursor": None}  # fmt: skip
            return as_result({**body, "provenance": store.provenance(snapshot, lineage, {})})
        query = ("lineage_trace", root, direction, depth, cap)
        shown, edges = paging.graph_page(
            walked, w.edges, limit, cursor, version=snapshot.version, query=query, cap=cap, default=cap,
            node_key="id",
        )  # fmt: skip
        on_page = {n["id"] for n in shown.items}
        health, joined = store.health_now()
        nodes = []
        for node_id in (n["id"] for n in shown.items):
            where = w.nodes[node_id]
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
        unresolved = [u for u in lineage.get("unresolved") or [] if u.get("node") in on_page]
        body = {
            **head,
            "nodes": nodes,
            "edges": edges,
            "truncated": shown.truncated or w.truncated,
            "next_cursor": shown.next_cursor,
            "unresolved": unresolved,
        }
        return as_result({**body, "provenance": store.provenance(snapshot, lineage, joined)})

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[IncidentAnswer])
    def lineage_explain_incident(
        start_kind: StartKind, start: Start, system: System = None, live: Live = True
    ) -> ToolResult:
        """What broke and why, for a broken or stale dashboard, tile, table, dbt node or job. Starts from the
        symptom as it is now (a tile is run, a table read, the newest dbt results and runs looked up) and probes
        the hops nearest to it live (one catalog read per table, a max(loaded_at) per source with freshness
        thresholds, the last run of each job that builds a model), then ranks the causes: first those that
        explain the symptom's own error (the column the tile misses, renamed in its table), then by onset (a
        condition that already held while the symptom was healthy is background, ranked low, and says so).
        Each cause names the object and the change, where its evidence came from (live, or which snapshot and
        how old), its onset, and the tool that confirms it; the verdict says it in one sentence.
        """
        snapshot, lineage, v = store.graph()
        root = start_of(v, start_kind, start, system)
        health, joined = store.health_now()
        findings, result, observed = LiveFindings(now=time.time()), None, []
        if live:
            args = {"start_kind": start_kind, "start": start, "system": system}
            findings, result, observed = probe_live("lineage_explain_incident", args, v, root)
        records = store.records(health, joined, lineage, snapshot.version)
        body = incident.explain(v, root, records, findings, dialect, default_cap)
        record("lineage_explain_incident", observed)
        read_live = (
            frozenset({"dbt_run_results"}) if live and "run_results" not in _missed(findings) else frozenset()
        )
        prov = store.provenance(snapshot, lineage, joined, read_live=read_live)
        if result is not None:
            prov = stamp_live(prov, result, findings)
        return as_result({**body, "provenance": prov})

    @server.tool(annotations=READ_ONLY_OPEN_WORLD, output_schema=published[WhatChangedAnswer])
    def lineage_what_changed(
        start_kind: StartKind,
        start: Start,
        since: Annotated[
            str,
            Field(
                min_length=2,
                max_length=40,
                description="From when: an ISO-8601 time (2026-11-24T14:00:00Z) or a span back from now (90m, "
                "24h, 7d).",
            ),
        ] = "7d",
        system: System = None,
        limit: Annotated[int, Field(ge=1, le=500, description="Events per page (docs/PAGING.md).")] = 50,
        cursor: Cursor = None,
        live: Live = True,
        until: Until = None,
    ) -> ToolResult:
        """What changed along the chain upstream of a dashboard, tile, table, dbt node or job since a moment,
        newest first, each event with its source: schema changes of its tables (snapshot history, what live
        tools observed, and a live read now), dbt runs and their outcome (incl. a newer run in the target
        folder and a dbt invocation that failed at parse), runs of the jobs and DAGs that build its models,
        freshness transitions of its sources, BI health transitions of its tiles, and commits to the dbt
        project that touched its files (git: author, time, message, files). Paged with limit and cursor
        (docs/PAGING.md: the cursor is the last event's sort key, so pages hold while new events arrive);
        since/until bound the window.
        """
        now = time.time()
        since_at = paging.parse_moment(since, now, "since")
        in_window = paging.window_matcher(None, until, now)
        snapshot, lineage, v = store.graph()
        root = start_of(v, start_kind, start, system)
        health, joined = store.health_now()
        chain = walk(v, root, "upstream", None, default_cap)
        findings, result, observed = LiveFindings(now=time.time()), None, []
        if live:
            args = {"start_kind": start_kind, "start": start, "system": system, "since": since}
            findings, result, observed = probe_live("lineage_what_changed", args, v, root, symptom=False)
        records = store.records(health, joined, lineage, snapshot.version)
        commits, notes = git_commits(settings, chain_files(v, chain), since_at)
        events = Timeline(v, chain, records, findings, since_at).build(commits)
        if until is not None:
            events = [e for e in events if in_window(e["_at"])]
        record("lineage_what_changed", observed)
        shown, next_cursor = page(events, limit, cursor)
        notes += [
            f"not probed live ({m['why']}): {m['probe']} {m['node'] or ''}".strip()
            for m in findings.not_reached
        ]
        body = {
            "start": root,
            "since": iso(since_at),
            "events": shown,
            "total_events": len(events),
            "truncated": next_cursor is not None,
            "next_cursor": next_cursor,
            "chain_nodes": len(chain.nodes),
            "notes": notes,
            "live": {
                "elapsed_ms": round(findings.elapsed_ms, 1),
                "not_reached": findings.not_reached,
                "failed": findings.failed,
            },
        }
        prov = store.provenance(snapshot, lineage, joined)
        if result is not None:
            prov = stamp_live(prov, result, findings)
        return as_result({**body, "provenance": prov})

    return server


def git_commits(settings: Any, files: list[str], since: float) -> tuple[list[dict[str, Any]], list[str]]:
    """Commits to the dbt project that touched the chain's files, and a note when git could not tell."""
    from datetime import UTC, datetime

    from ade_platform.clients.git import GitError, commits

    if settings.dbt is None:
        return [], ["no dbt project is configured: no git history"]
    try:
        found = commits(settings.dbt.project_dir, files, datetime.fromtimestamp(since, UTC))
    except GitError as exc:
        return [], [f"git history not read: {exc.detail}"]
    return found, []


def _missed(findings: LiveFindings) -> set[str]:
    return {m["probe"] for m in findings.not_reached} | {f["probe"] for f in findings.failed}
