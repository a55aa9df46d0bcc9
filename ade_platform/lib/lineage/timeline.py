"""What changed along a chain since a moment: one ordered list of events from every system, each with its source.

- schema changes of the chain's tables: consecutive schema snapshot versions compared, then what live tools
  observed since the newest, then the live read now;
- dbt runs (each run results version: how the chain's nodes did), a newer run_results.json in the target folder,
  the newest dbt invocation from dbt's log (a parse error writes nothing else);
- the runs of the jobs, DAGs and deployments that build the chain's models;
- freshness transitions of the chain's sources (snapshot to snapshot, and the live check);
- BI health transitions of the chain's tiles and dashboards (snapshots and observations);
- commits to the dbt project that touched the chain's files (author, time, message, files).
Newest first; the cursor of a page is the sort key of its last event, so a page boundary holds while new
events arrive at the top.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from ade_platform.lib.lineage.conditions import (
    cache_source,
    epoch_of,
    iso,
    live_source,
    short_relation,
    table_changes,
)
from ade_platform.lib.lineage.evidence import (
    FAILED_DBT,
    LiveFindings,
    Records,
    freshness_statuses,
    run_statuses,
    tile_statuses,
)
from ade_platform.lib.lineage.history import VersionRef
from ade_platform.lib.lineage.tables import compare, fingerprint
from ade_platform.lib.lineage.trace import Walk, builders_of
from ade_platform.lib.paging import PagingError


def _event(
    at: float | None,
    kind: str,
    node: str | None,
    obj: str,
    change: str,
    source: dict[str, Any],
    **detail: Any,
) -> dict[str, Any]:
    return {
        "at": iso(at),
        "kind": kind,
        "node": node,
        "object": obj,
        "change": change,
        "source": source,
        "detail": detail,
        "_at": at or 0.0,
    }


def _pairs(refs: list[VersionRef], since: float) -> list[tuple[VersionRef, VersionRef | None]]:
    """(newer, older) for every version at or after `since` (older None for the oldest retained)."""
    out = []
    for i, ref in enumerate(refs):
        if ref.at < since:
            break
        out.append((ref, refs[i + 1] if i + 1 < len(refs) else None))
    return out


class Timeline:
    def __init__(self, v: dict[str, Any], chain: Walk, records: Records, live: LiveFindings, since: float):
        self.v, self.nodes, self.chain = v, v["nodes"], chain
        self.records, self.live, self.since, self.now = records, live, since, live.now
        self.out: list[dict[str, Any]] = []

    def build(self, commits: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.schema()
        self.dbt_runs()
        self.builders()
        self.freshness()
        self.bi_health()
        self.git(commits)
        self.out.sort(key=sort_key)
        return self.out

    # --- schemas ------------------------------------------------------------------------------------------------
    def schema(self) -> None:
        tables: dict[str, list[tuple[str, str]]] = {}
        for node_id in self.chain.nodes:
            node = self.nodes.get(node_id, {})
            if node.get("system") == "warehouse" and node.get("warehouse") in self.records.schemas:
                tables.setdefault(node["warehouse"], []).append((node_id, str(node.get("name"))))
        for wh, chain_tables in tables.items():
            schemas = self.records.schemas[wh]
            refs = self.records.history.versions(schemas.asset)
            for newer, older in _pairs(refs, self.since):
                if older is None:
                    continue
                new_fps, old_fps = schemas.fingerprints(newer), schemas.fingerprints(older)
                for node_id, key in chain_tables:
                    if new_fps.get(key) != old_fps.get(key):
                        source = cache_source(schemas.asset, newer.version, newer.at, self.now)
                        self._table_event(
                            node_id,
                            key,
                            schemas.table_at(older, key),
                            schemas.table_at(newer, key),
                            newer.at,
                            source,
                            wh,
                        )
            newest = refs[0] if refs else None
            for node_id, key in chain_tables:
                last = schemas.table_at(newest, key) if newest else None
                last_at = newest.at if newest else 0.0
                for at, table in self._observed(wh, key):
                    if newest is not None and at <= newest.at:
                        continue
                    if fingerprint(table, schemas.warehouse_type) != fingerprint(
                        last, schemas.warehouse_type
                    ):
                        if at >= self.since:
                            self._table_event(
                                node_id,
                                key,
                                last,
                                table,
                                at,
                                {"source": "observation", "observed_at": iso(at)},
                                wh,
                            )
                        last, last_at = table, at
                state = self.live.tables.get(node_id)
                if state is not None and fingerprint(state.table, schemas.warehouse_type) != fingerprint(
                    last, schemas.warehouse_type
                ):
                    self._table_event(
                        node_id,
                        key,
                        last,
                        state.table,
                        state.live_at or self.now,
                        live_source(state.live_at or self.now),
                        wh,
                        after=last_at,
                    )

    def _observed(self, wh: str, key: str) -> list[tuple[float, dict[str, Any] | None]]:
        if self.records.observations is None:
            return []
        parts = key.split(".")
        obs = self.records.observations("table_schema", f"{wh}:{parts[-2]}.{parts[-1]}".lower())
        return [(o.observed_at, o.state if (o.state or {}).get("exists", True) else None) for o in obs]

    def _table_event(
        self,
        node_id: str,
        key: str,
        old: dict[str, Any] | None,
        new: dict[str, Any] | None,
        at: float,
        source: dict[str, Any],
        wh: str,
        **detail: Any,
    ) -> None:
        short = short_relation(key)
        schemas = self.records.schemas[wh]
        if old is None and new is None:
            return
        if old is None:
            self.out.append(_event(at, "schema_change", node_id, short, "created", source, **detail))
            return
        report = compare(old, new, schemas.warehouse_type)
        if report.get("relation_missing"):
            self.out.append(_event(at, "schema_change", node_id, short, "dropped", source, **detail))
            return
        changes = table_changes(report)
        changes += [
            (c["column_name"], "added")
            for c in report.get("added_in_warehouse") or []
            if c["column_name"].lower() not in {r["to"].lower() for r in report.get("likely_renames") or []}
        ]
        for col, what in changes:
            self.out.append(_event(at, "schema_change", node_id, f"{short}.{col}", what, source, **detail))

    # --- dbt ----------------------------------------------------------------------------------------------------
    def _dbt_uids(self) -> dict[str, str]:
        return {
            self.nodes[n]["unique_id"]: n
            for n in self.chain.nodes
            if self.nodes.get(n, {}).get("system") == "dbt" and self.nodes[n].get("unique_id")
        }

    def dbt_runs(self) -> None:
        uids = self._dbt_uids()
        asset = "dbt_run_results"
        for newer, _ in _pairs(self.records.history.versions(asset), self.since):
            statuses = self.records.history.reduce(asset, newer, "statuses", run_statuses)
            self._run_event(
                newer.at,
                {u: s for u, s in statuses.items() if u in uids},
                uids,
                cache_source(asset, newer.version, newer.at, self.now),
            )
        run = self.live.run_results
        if run is not None and (run.get("generated_at") or 0) >= self.since:
            statuses = {u: r["status"] for u, r in (run.get("results") or {}).items() if u in uids}
            self._run_event(
                run.get("generated_at"),
                statuses,
                uids,
                {**live_source(run.get("observed_at") or self.now), "file": run.get("path")},
            )
        inv = self.live.invocation
        at = (inv or {}).get("finished_at") or (inv or {}).get("started_at")
        if inv and at and at >= self.since:
            change = {"parse_error": "failed at parse (no artifacts)", "error": "failed"}.get(
                inv.get("status"), str(inv.get("status"))
            )
            self.out.append(
                _event(
                    at, "dbt_invocation", None, f"dbt {inv.get('command') or ''}".strip(), change,
                    {**live_source(inv.get("observed_at") or self.now), "file": "dbt.log"},
                    error=inv.get("error"), failed_nodes=list(inv.get("failed_nodes") or [])[:20],
                    wrote_artifacts=bool(inv.get("wrote_artifacts")),
                )
            )  # fmt: skip

    def _run_event(
        self, at: float | None, statuses: dict[str, str], uids: dict[str, str], source: dict[str, Any]
    ) -> None:
        if not statuses:
            return
        failed = sorted(self.nodes[uids[u]].get("name") or u for u, s in statuses.items() if s in FAILED_DBT)
        skipped = sorted(self.nodes[uids[u]].get("name") or u for u, s in statuses.items() if s == "skipped")
        change = f"{len(statuses)} chain node(s) ran" + (
            f"; failed: {', '.join(failed[:5])}" if failed else ""
        )
        change += f"; skipped: {', '.join(skipped[:5])}" if skipped else ""
        self.out.append(
            _event(
                at,
                "dbt_run",
                None,
                "dbt run",
                change,
                source,
                statuses={self.nodes[uids[u]].get("name") or u: s for u, s in sorted(statuses.items())[:50]},
            )
        )

    # --- builders -----------------------------------------------------------------------------------------------
    def builders(self) -> None:
        seen: set[str] = set()
        for node_id in self.chain.nodes:
            for b in builders_of(self.v, node_id):
                seen.add(b["builder"])
            if self.nodes.get(node_id, {}).get("kind") in ("job", "dag", "deployment"):
                seen.add(node_id)
        for builder in sorted(seen):
            node = self.nodes.get(builder, {})
            system = node.get("system")
            asset = "dbt_cloud_runs" if system == "dbt_cloud" else f"orchestrator_runs_{system}"
            ref = self.records.ref(asset)
            runs = list(self.records.health.job_history.get(builder) or [])
            known = {str(r.get("run_id") or r.get("id")) for r in runs}
            live = self.live.builders.get(builder)
            sources = [
                cache_source(asset, ref.version, ref.at, self.now)
                if ref
                else {"source": "cache", "asset": asset}
            ] * len(runs)
            if live is not None and str(live.get("run_id") or live.get("id")) not in known:
                runs.insert(0, live)
                sources.insert(0, live_source(live["observed_at"]))
            for run, source in zip(runs, sources, strict=True):
                at = epoch_of(
                    run.get("finished_at")
                    or run.get("end_date")
                    or run.get("started_at")
                    or run.get("start_date")
                )
                if at is None or at < self.since:
                    continue
                message = run.get("status_message") or run.get("message") or run.get("failure_signature")
                run_id = run.get("run_id") or run.get("id")
                self.out.append(
                    _event(
                        at,
                        "builder_run",
                        builder,
                        f"{system} {node.get('kind')} {node.get('name')}",
                        f"run {run_id} {run.get('status')}",
                        source,
                        run_id=run_id,
                        message=message,
                    )
                )

    # --- freshness and BI health --------------------------------------------------------------------------------
    def freshness(self) -> None:
        sources = {
            self.nodes[n]["unique_id"]: n
            for n in self.chain.nodes
            if self.nodes.get(n, {}).get("kind") == "source"
        }
        self._transitions(
            "dbt_sources",
            "freshness",
            freshness_statuses,
            {u: (n, f"source {short_relation(u)}") for u, n in sources.items()},
        )
        ref = self.records.ref("dbt_sources")
        for uid, node_id in sources.items():
            live = self.live.freshness.get(node_id)
            snap = str((self.records.health.freshness.get(uid) or {}).get("status") or "").lower()
            if live is not None and live.get("status") and live["status"] != snap:
                self.out.append(
                    _event(
                        live["observed_at"],
                        "freshness",
                        node_id,
                        f"source {short_relation(uid)}",
                        f"{snap or '?'} -> {live['status']}",
                        live_source(live["observed_at"]),
                        max_loaded_at=live.get("max_loaded_at"),
                        after=iso(ref.at) if ref else None,
                    )
                )

    def bi_health(self) -> None:
        keys: dict[str, tuple[str, str]] = {}
        by_tool: dict[str, dict[str, tuple[str, str]]] = {}
        for n in self.chain.nodes:
            node = self.nodes.get(n, {})
            if node.get("kind") == "tile":
                key = f"{node.get('dashboard_id')}/{node.get('tile_id')}"
            elif node.get("kind") == "dashboard":
                key = str(node.get("dashboard_id"))
            else:
                continue
            by_tool.setdefault(str(node.get("system")), {})[key] = (
                n,
                f"{node.get('kind')} '{node.get('name')}'",
            )
            keys[n] = (str(node.get("system")), key)
        for tool, wanted in by_tool.items():
            self._transitions(f"bi_health_{tool}", "bi_health", tile_statuses, wanted)
        if self.records.observations is None:
            return
        for n, (tool, key) in keys.items():
            if "/" not in key:
                continue
            dash, tile = key.split("/", 1)
            previous = None
            for o in self.records.observations("bi_tile_health", f"{tool}:dashboard/{dash}/tile/{tile}"):
                status = (o.state or {}).get("status")
                if status and status != previous and o.observed_at >= self.since:
                    self.out.append(
                        _event(
                            o.observed_at,
                            "bi_health",
                            n,
                            keys_name(self.nodes[n]),
                            f"{previous or '?'} -> {status}",
                            {"source": "observation", "observed_at": iso(o.observed_at), "by": o.source},
                            error=(o.state or {}).get("error"),
                        )
                    )
                previous = status

    def _transitions(self, asset: str, kind: str, reduce: Any, wanted: dict[str, tuple[str, str]]) -> None:
        """Status changes of the wanted keys between consecutive versions of an asset."""
        for newer, older in _pairs(self.records.history.versions(asset), self.since):
            now = self.records.history.reduce(asset, newer, "statuses", reduce)
            before = self.records.history.reduce(asset, older, "statuses", reduce) if older else {}
            for key, (node_id, obj) in wanted.items():
                if key in now and now[key] != before.get(key):
                    change = (
                        f"{before.get(key) or 'first seen'} -> {now[key]}"
                        if older
                        else f"first seen {now[key]}"
                    )
                    self.out.append(
                        _event(
                            newer.at,
                            kind,
                            node_id,
                            obj,
                            change,
                            cache_source(asset, newer.version, newer.at, self.now),
                        )
                    )

    # --- git ----------------------------------------------------------------------------------------------------
    def git(self, commits: list[dict[str, Any]]) -> None:
        for c in commits:
            at = epoch_of(c.get("at"))
            self.out.append(
                _event(
                    at,
                    "git_commit",
                    None,
                    f"commit {str(c.get('sha'))[:10]}",
                    str(c.get("message")),
                    {"source": "git"},
                    author=c.get("author"),
                    files=list(c.get("files") or [])[:20],
                    sha=c.get("sha"),
                )
            )


def keys_name(node: dict[str, Any]) -> str:
    return f"{node.get('kind')} '{node.get('name')}'"


def chain_files(v: dict[str, Any], chain: Walk) -> list[str]:
    """The dbt project files of the chain's dbt nodes (models, seeds, snapshots, the yml of sources), and the
    project file."""
    files = {"dbt_project.yml"}
    for n in chain.nodes:
        path = v["nodes"].get(n, {}).get("path")
        if path:
            files.add(str(path))
    return sorted(files)


def sort_key(event: dict[str, Any]) -> tuple[float, str, str, str, str]:
    return (
        -(event.get("_at") or 0.0),
        event["kind"],
        event.get("node") or "",
        event["object"],
        event["change"],
    )


def encode_cursor(event: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(list(sort_key(event))).encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str, str, str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw)
        if not (isinstance(key, list) and len(key) == 5 and isinstance(key[0], (int, float))):
            raise ValueError
        return (float(key[0]), str(key[1]), str(key[2]), str(key[3]), str(key[4]))
    except (ValueError, TypeError, json.JSONDecodeError):
        raise PagingError(
            "invalid_cursor", "the cursor is not one this tool returned", hint="Pass next_cursor unchanged."
        ) from None


def page(
    events: list[dict[str, Any]], limit: int, cursor: str | None
) -> tuple[list[dict[str, Any]], str | None]:
    """The events after the cursor (newest first), at most `limit`, and the cursor of the next page."""
    if cursor is not None:
        after = decode_cursor(cursor)
        events = [e for e in events if sort_key(e) > after]
    shown = events[:limit]
    next_cursor = encode_cursor(shown[-1]) if len(events) > limit and shown else None
    return [{k: v for k, v in e.items() if k != "_at"} for e in shown], next_cursor
