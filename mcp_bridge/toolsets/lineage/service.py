"""What the lineage tools do: find the start node in the graph, walk it, join each hop's health from the
snapshots (records.py), probe the symptom and the nearest hops live as one audited read-only run (live.py), and
stamp the answer's provenance."""

from __future__ import annotations

import time
from typing import Any

from fastmcp.tools import ToolResult

from ade_platform.lib import paging
from ade_platform.lib.incidents.model import feedback_of
from ade_platform.lib.lineage import incident
from ade_platform.lib.lineage.conditions import epoch_of, iso
from ade_platform.lib.lineage.evidence import LiveFindings
from ade_platform.lib.lineage.gather_values import value_events
from ade_platform.lib.lineage.timeline import Timeline, chain_files, page, sort_key
from ade_platform.lib.lineage.trace import LineageLookupError, builders_of, find_start, status_of, walk
from ade_platform.store import SnapshotNotFound
from ade_platform.store.incidents import IncidentJournal
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.dbt.inputs import as_result
from mcp_bridge.toolsets.lineage.live import OBSERVATION_REUSE_SECONDS, LiveProber
from mcp_bridge.toolsets.lineage.records import LineageStore, topology_of


class LineageService:
    """The graph and health store, the live prober and the lineage settings, built once per gateway."""

    def __init__(self, ctx: BridgeContext):
        settings = ctx.settings
        self.ctx = ctx
        self.store = LineageStore(ctx, topology_of(settings))
        self.prober = LiveProber(settings)
        self.default_cap = settings.lineage.max_nodes
        self.budget_ms = settings.lineage.live_budget_ms
        wh = settings.warehouses.get(self.store.topology.dbt_warehouse or "")
        self.dialect = wh.type if wh else None

    # ---- the three answers ------------------------------------------------------------------------------
    def trace(
        self,
        start_kind: str,
        start: str,
        system: str | None,
        direction: str,
        depth: int | None,
        max_nodes: int | None,
        limit: int | None = None,
        cursor: str | None = None,
        detail: str = "full",
    ) -> ToolResult:
        store = self.store
        snapshot, lineage, v = store.graph()
        root = self.start_of(v, start_kind, start, system)
        cap = max_nodes or self.default_cap
        w = walk(v, root, direction, depth, cap)  # type: ignore[arg-type]
        walked = [
            {"id": node_id, "kind": v["nodes"][node_id].get("kind"), "depth": where["depth"]}
            for node_id, where in w.nodes.items()
        ]
        head = {"start": root, "direction": direction, "total_nodes": len(walked)}
        if detail == "summary":  # the graph's size before its nodes: no health read
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

    def explain_incident(self, start_kind: str, start: str, system: str | None, live: bool) -> ToolResult:
        tool = "lineage_explain_incident"
        store = self.store
        snapshot, lineage, v = store.graph()
        root = self.start_of(v, start_kind, start, system)
        health, joined = store.health_now()
        findings, result, observed = LiveFindings(now=time.time()), None, []
        if live:
            args = {"start_kind": start_kind, "start": start, "system": system}
            findings, result, observed = self.probe_live(tool, args, v, root)
        records = store.records(health, joined, lineage, snapshot.version)
        blame = git_blame(self.ctx.settings) if live else None
        feedback = feedback_of(IncidentJournal(self.ctx.reader.root).state())
        body = incident.explain(v, root, records, findings, self.dialect, self.default_cap, blame, feedback)
        self.record(tool, observed, findings.now, findings.values.values())
        read_live = (
            frozenset({"dbt_run_results"}) if live and "run_results" not in _missed(findings) else frozenset()
        )
        prov = store.provenance(snapshot, lineage, joined, read_live=read_live)
        if result is not None:
            prov = self.stamp_live(prov, result, findings)
        return as_result({**body, "provenance": prov})

    def what_changed(
        self,
        start_kind: str,
        start: str,
        since: str,
        system: str | None,
        limit: int,
        cursor: str | None,
        live: bool,
        until: str | None = None,
    ) -> ToolResult:
        tool = "lineage_what_changed"
        now = time.time()
        since_at = paging.parse_moment(since, now, "since")
        in_window = paging.window_matcher(None, until, now)
        store = self.store
        snapshot, lineage, v = store.graph()
        root = self.start_of(v, start_kind, start, system)
        health, joined = store.health_now()
        chain = walk(v, root, "upstream", None, self.default_cap)
        findings, result, observed = LiveFindings(now=time.time()), None, []
        if live:
            args = {"start_kind": start_kind, "start": start, "system": system, "since": since}
            findings, result, observed = self.probe_live(tool, args, v, root, symptom=False, since=since_at)
        records = store.records(health, joined, lineage, snapshot.version)
        commits, notes = git_commits(self.ctx.settings, chain_files(v, chain), since_at)
        events = Timeline(v, chain, records, findings, since_at).build(commits)
        events = sorted(events + value_events(list(findings.values.values())), key=sort_key)
        if until is not None:
            events = [e for e in events if in_window(e["_at"])]
        self.record(tool, observed, findings.now, findings.values.values())
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
            prov = self.stamp_live(prov, result, findings)
        return as_result({**body, "provenance": prov})

    # ---- the steps they share ---------------------------------------------------------------------------
    def start_of(self, v: dict[str, Any], kind: str, start: str, system: str | None) -> str:
        try:
            return find_start(v, kind, start, system)  # type: ignore[arg-type]
        except LineageLookupError as exc:
            detail = str(exc) + (f"; candidates: {', '.join(exc.candidates)}" if exc.candidates else "")
            raise ToolFailure(exc.code, detail) from None

    def observed_symptom(self, node: dict[str, Any]) -> dict[str, Any] | None:
        """A tile health another live tool recorded seconds ago: the symptom now, without running it again."""
        if node.get("kind") != "tile":
            return None
        key = f"{node.get('system')}:dashboard/{node.get('dashboard_id')}/tile/{node.get('tile_id')}"
        found = self.store.latest_observation("bi_tile_health", key)
        if found is None or time.time() - found.observed_at > OBSERVATION_REUSE_SECONDS:
            return None
        state = dict(found.state or {})
        return {**state, "observed_at": found.observed_at, "via": f"observation by {found.source}"}

    def probe_live(
        self,
        tool: str,
        arguments: dict[str, Any],
        v: dict[str, Any],
        root: str,
        symptom: bool = True,
        since: float | None = None,
    ) -> tuple[LiveFindings, Any, list[Any]]:
        """The symptom (unless told not to) and the chain, probed live as one audited read-only run."""
        chain = walk(v, root, "upstream", None, self.default_cap)
        try:
            run_results = self.ctx.reader.latest("dbt_run_results").provenance
        except SnapshotNotFound:
            run_results = None
        reused = self.observed_symptom(v["nodes"][root]) if symptom else None
        probes = self.prober.plan(v, root, chain, run_results, reused, symptom=symptom, since=since)

        def run() -> tuple[LiveFindings, list[Any]]:
            return self.prober.probe(probes, self.budget_ms, time.time())

        result = self.ctx.live().run(tool, run, arguments=arguments, effects="none")
        findings, observed = result.value
        if reused is not None:
            findings.symptom = reused
        return findings, result, observed

    def record(self, tool: str, observed: list[Any], read_at: float, values: Any = ()) -> None:
        """What was read now updates the shared picture (written in the background): after the answer is
        built, so the answer's own history never holds what this very call observed. Stamped with the moment
        of the read, so the next answer dates a change exactly as this one did."""
        for found in values:  # kept after the answer, on the observations' background writer
            if found.profile is not None:
                self.ctx.keep_profile(found.profile, source=tool)
        for found in observed:
            self.ctx.observe(
                found.kind, found.key, found.state, source=tool, asset=found.asset, observed_at=read_at
            )

    def stamp_live(self, prov: dict[str, Any], result: Any, findings: LiveFindings) -> dict[str, Any]:
        prov["source"] = "live"
        prov["live"] = {
            "run_id": result.run_id,
            "elapsed_ms": round(findings.elapsed_ms, 1),
            "budget_ms": self.budget_ms,
        }
        return prov


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


def git_blame(settings: Any) -> Any:
    """Who last changed each of some project files: an uncommitted edit in the working tree, else the newest
    commit to it (clients/git.py: fixed argument lists, the paths after `--`); {} when git cannot tell."""
    from datetime import UTC, datetime

    from ade_platform.clients.git import GitError, commits, uncommitted

    if settings.dbt is None:
        return None
    project = settings.dbt.project_dir

    def blame(files: list[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        try:
            for path in uncommitted(project, files):
                out[path] = {"uncommitted": True}
            # the newest commit to each file: the code the build ran, when the working tree does not differ
            since = datetime.fromtimestamp(time.time() - _BLAME_DAYS * 86400, UTC)
            for order, commit in enumerate(commits(project, files, since, limit=100)):
                at = epoch_of(commit.get("at"))
                for path in commit["files"]:  # newest first: git log's order (it breaks ties within a second)
                    out.setdefault(_under(path, files), {**commit, "at": at, "files": None, "order": order})
        except GitError:
            return out
        return out

    return blame


def _under(path: str, files: list[str]) -> str:
    """git log names files from the repository's root: the one of `files` (relative to the project) it is."""
    return next((f for f in files if path == f or path.endswith("/" + f)), path)


_BLAME_DAYS = 90


def _missed(findings: LiveFindings) -> set[str]:
    return {m["probe"] for m in findings.not_reached} | {f["probe"] for f in findings.failed}
