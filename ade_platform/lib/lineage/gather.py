"""Gather the conditions along an upstream chain, live evidence first and snapshots where the probes did not reach.

Per hop: a warehouse table's breaking change (tables.py); a dbt model's failure or skip in the newest run results
(a newer run_results.json in the dbt target folder wins over the snapshot); its failing tests; its drift from what
dbt declares; a source's freshness (a live `max(loaded_at)` wins); the last run of each job that builds a model
(a live read wins); a tile whose SQL names a column its table lacks; and once per chain, a dbt invocation that
failed without writing artifacts (a parse error).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from ade_platform.lib.lineage.conditions import Condition, Onset, epoch_of, live_source, short_relation
from ade_platform.lib.lineage.evidence import (
    FAILED_DBT,
    STALE,
    LiveFindings,
    Records,
    drift_severities,
    freshness_statuses,
    run_statuses,
    snapshot_source,
    status_streak,
)
from ade_platform.lib.lineage.gather_jobs import JobConditions
from ade_platform.lib.lineage.relations import missing_columns
from ade_platform.lib.lineage.tables import TableState, table_change
from ade_platform.lib.lineage.trace import Walk, builders_of

RUN_RESULTS = "dbt_run_results"
SOURCES = "dbt_sources"
_NOT_PASSED = FAILED_DBT | {"warn"}  # a test's statuses that make it failing


class Gatherer(JobConditions):
    def __init__(self, v: dict[str, Any], records: Records, live: LiveFindings, dialect: str | None):
        self.v = v
        self.nodes: dict[str, dict[str, Any]] = v["nodes"]
        self.records = records
        self.live = live
        self.dialect = dialect
        self.now = live.now
        self.out: list[Condition] = []
        self.failed_in_logs: list[tuple[str, int]] = []

    # --- per hop ------------------------------------------------------------------------------------------------
    def chain(self, chain: Walk, start: str) -> list[Condition]:
        seen_builders: dict[str, int] = {}
        for node_id, where in chain.nodes.items():
            node = self.nodes.get(node_id, {})
            depth = where["depth"]
            if node.get("system") == "warehouse":
                self.table(node_id, node, depth)
            elif node.get("system") == "dbt":
                self.dbt_node(node_id, node, depth)
                for b in builders_of(self.v, node_id):
                    if b["builder"] not in seen_builders or depth < seen_builders[b["builder"]]:
                        seen_builders[b["builder"]] = depth
            elif node.get("kind") == "tile":
                self.tile(node_id, node, depth)
            elif node.get("system") == "openlineage" and node.get("kind") == "job":
                # a job OpenLineage names is on the chain itself (it reads and writes its hops)
                seen_builders[node_id] = min(depth, seen_builders.get(node_id, depth))
        for builder, depth in seen_builders.items():
            self.builder(builder, depth, chain)
        self.invocation(chain)
        self._date_tile_sql()
        return self.out

    def _date_tile_sql(self) -> None:
        """A tile naming a column its table lacks began when the table lost it (if a change says so)."""
        changes = [c for c in self.out if c.cause == "schema_change"]
        for cond in self.out:
            if cond.cause != "tile_references_missing_column":
                continue
            read = set(cond.evidence.get("tables") or ())
            cause = next((c for c in changes if c.node in read and c.columns & cond.columns), None)
            if cause is not None:
                cond.onset = cause.onset

    def table(self, node_id: str, node: dict[str, Any], depth: int) -> None:
        schemas = self.records.schemas.get(node.get("warehouse") or "")
        if schemas is None:
            return
        state = self.live.tables.get(node_id)
        if state is None:
            newest = schemas.newest()
            if newest is None:
                return
            key = str(node.get("name"))
            state = TableState(key, schemas.table_at(newest, key), None)
        cond = table_change(node_id, depth, state, schemas, self.now, self._observed_table(node))
        if cond is not None:
            self.out.append(cond)

    def _observed_table(self, node: dict[str, Any]) -> list[tuple[float, dict[str, Any] | None]]:
        """The table as live tools observed it (table_schema observations), oldest first."""
        if self.records.observations is None:
            return []
        parts = str(node.get("name")).split(".")
        if len(parts) < 2:
            return []
        key = f"{node.get('warehouse')}:{parts[-2]}.{parts[-1]}".lower()
        return [
            (o.observed_at, o.state if (o.state or {}).get("exists", True) else None)
            for o in self.records.observations("table_schema", key)
        ]

    def _result(self, uid: str) -> tuple[dict[str, Any] | None, bool]:
        """The newest run result of a node: (result, from the live file)."""
        newer = (self.live.run_results or {}).get("results") or {}
        if uid in newer:
            return newer[uid], True
        return self.records.health.results.get(uid), False

    def _streak(
        self,
        asset: str,
        key: str,
        reduce: Callable[[Any], dict[str, str]],
        uids: set[str],
        wanted: Collection[str],
        since: float | None = None,
    ) -> Onset:
        """Since when the history of `asset` (reduced to node -> status) shows one of the nodes `uids` in one of
        the `wanted` statuses; `since` when no version does."""
        return status_streak(self.records, asset, key, reduce, lambda m: _holds(m, uids, wanted), since)

    def _run_onset(self, uid: str, statuses: frozenset[str], live: bool) -> Onset:
        snap = str((self.records.health.results.get(uid) or {}).get("status") or "").lower()
        if live and snap not in statuses:
            return self._after_snapshot((self.live.run_results or {}).get("generated_at"), RUN_RESULTS)
        return self._streak(RUN_RESULTS, "statuses", run_statuses, {uid}, statuses)

    def _run_source(self, live: bool) -> dict[str, Any]:
        if live:
            run = self.live.run_results or {}
            return {**live_source(run.get("observed_at") or self.now), "file": run.get("path")}
        return snapshot_source(self.records, RUN_RESULTS, self.now)

    def dbt_node(self, node_id: str, node: dict[str, Any], depth: int) -> None:
        uid = node.get("unique_id") or ""
        name = node.get("name")
        kind = node.get("kind")
        result, live = self._result(uid)
        status = str((result or {}).get("status") or "").lower()
        if kind != "source" and status in FAILED_DBT:
            message = str((result or {}).get("message") or "")[:500] or None
            relation = node.get("relation")
            self._add(
                "failed_model",
                (node_id, node, depth),
                evidence={"run_status": status, "message": message},
                source=self._run_source(live),
                onset=self._run_onset(uid, FAILED_DBT, live),
                relations=frozenset(r for r in (relation, short_relation(relation or ""), name) if r),
                message=message,
            )
        elif kind != "source" and status == "skipped":
            self._add(
                "skipped_model",
                (node_id, node, depth),
                evidence={"run_status": status},
                source=self._run_source(live),
                onset=self._run_onset(uid, frozenset({"skipped"}), live),
            )
        self._tests(node_id, node, depth)
        self._drift(node_id, node, depth)
        if kind == "source":
            self._freshness(node_id, node, depth)

    def _tests(self, node_id: str, node: dict[str, Any], depth: int) -> None:
        uid = node.get("unique_id") or ""
        health = self.records.health
        failing, live = [], False
        tests_of = health.tests_of(node)
        for tid, name in tests_of.items():
            result, from_live = self._result(tid)
            status = str((result or {}).get("status") or "").lower()
            if status in _NOT_PASSED:
                failing.append({"test": name, "status": status})
                live = live or from_live
        if not failing:
            return
        since = self.now if live else None
        self._add(
            "failing_tests",
            (node_id, node, depth),
            facts={"count": len(failing)},
            evidence={"failing": failing[:10]},
            source=self._run_source(live),
            onset=self._streak(RUN_RESULTS, "statuses", run_statuses, set(tests_of), _NOT_PASSED, since),
            tool_args={"model_name": uid},
        )

    def _drift(self, node_id: str, node: dict[str, Any], depth: int) -> None:
        uid = node.get("unique_id") or ""
        drift = self.records.health.drift.get(uid)
        if not drift or drift.get("severity") != "error":
            return
        table_id = f"warehouse:{drift.get('warehouse')}:table:{node.get('relation')}"
        if any(c.cause == "schema_change" and c.node == table_id for c in self.out):
            return  # the table's own change since its snapshots says it better
        asset = f"warehouse_drift_{drift.get('warehouse')}"
        removed = [c.get("column_name") for c in drift.get("removed_from_warehouse") or []]
        retyped = [c.get("column_name") for c in drift.get("type_changed") or []]
        evidence = {
            "removed_from_warehouse": removed,
            "type_changed": retyped,
            "likely_renames": drift.get("likely_renames") or [],
            "relation_missing": drift.get("relation_missing"),
        }
        self._add(
            "schema_drift",
            (node_id, node, depth),
            evidence=evidence,
            source=snapshot_source(self.records, asset, self.now),
            onset=self._streak(asset, "severities", drift_severities, {uid}, {"error"}),
            tool_args={"model_name": node.get("name")},
            columns=frozenset(str(c).lower() for c in removed if c),
            retyped=frozenset(str(c).lower() for c in retyped if c),
        )

    def _freshness(self, node_id: str, node: dict[str, Any], depth: int) -> None:
        uid = node.get("unique_id") or ""
        snap = self.records.health.freshness.get(uid) or {}
        snap_status = str(snap.get("status") or "").lower()
        live = self.live.freshness.get(node_id)
        if live is not None and live.get("status"):
            status = live["status"]
            if status not in STALE:
                return
            max_loaded = live.get("max_loaded_at")
            # new since the snapshot: it began after it; as stale there: dated by the snapshots' history (below)
            onset = None if snap_status == status else self._after_snapshot(live["observed_at"], SOURCES)
            source = live_source(live["observed_at"])
            evidence = {
                k: live.get(k) for k in ("status", "max_loaded_at", "hours_since_load", "loaded_at_field")
            }
            evidence["thresholds_hours"] = {
                "warn_after": live.get("warn_after"),
                "error_after": live.get("error_after"),
            }
        elif snap_status in STALE:
            status, max_loaded, onset = snap_status, snap.get("max_loaded_at"), None
            source = snapshot_source(self.records, SOURCES, self.now)
            evidence = {"status": status, "max_loaded_at": max_loaded}
        else:
            return
        if onset is None:
            onset = self._streak(SOURCES, "statuses", freshness_statuses, {uid}, {status})
        hours = evidence.get("hours_since_load")
        how = "stopped loading" if status in ("error", "runtime error") else "is late"
        if isinstance(hours, (int, float)):
            detail = f"last load {hours:.1f} h ago"
        else:
            detail = f"last load at {max_loaded}" if max_loaded else "no load recorded"
        self._add(
            "stale_source",
            (node_id, node, depth),
            facts={"how": how, "detail": detail, "status": status},
            evidence=evidence,
            source=source,
            onset=onset,
            name=".".join(str(node.get("unique_id") or "").split(".")[-2:]),
            extra={"loaded_at": epoch_of(max_loaded)},
        )

    def tile(self, node_id: str, node: dict[str, Any], depth: int) -> None:
        read = [e["from"] for e in self.v["up"].get(node_id, ()) if e["kind"] == "reads"]
        if not (node.get("sql") or node.get("columns")) or not read:
            return
        cols = []
        for r in read:
            state = self.live.tables.get(r)
            if state is not None and state.table is not None:
                cols.append({str(c.get("name")).lower() for c in state.table.get("columns") or []})
            else:
                cols.append(self.records.table_columns.get(r, set()))
        if node.get("sql"):
            missing = missing_columns(node["sql"], cols, self.dialect)
        else:  # a LookML tile: the warehouse columns its fields read
            known = set().union(*cols) if cols and all(cols) else None
            missing = sorted(
                c.lower() for c in node["columns"] if known is not None and c.lower() not in known
            )
        if not missing:
            return
        models = [e["from"] for r in read for e in self.v["up"].get(r, ()) if e["kind"] == "materializes"]
        tables = ", ".join(short_relation(str(self.nodes[r].get("name"))) for r in read)
        live = any(r in self.live.tables for r in read)
        first = str(self.nodes[read[0]].get("name"))
        self._add(
            "tile_references_missing_column",
            (node_id, node, depth),
            facts={"missing": ", ".join(missing), "tables": tables},
            evidence={"missing_columns": missing, "tables": read, "models": models},
            source=self._source(live, self.now, "cross_stack_lineage"),
            onset=Onset(at=None, origin="tile_sql"),  # no table ever had it: when the SQL changed
            tool_args={
                "schema_name": short_relation(first).split(".")[0],
                "table_name": first.split(".")[-1],
            },
            object=f"tile '{node.get('name')}'",
            columns=frozenset(missing),
        )


def _holds(statuses: dict[str, str], uids: set[str], wanted: Collection[str]) -> bool | None:
    """Whether any of the nodes has one of the wanted statuses in a record; None when the record has none of them."""
    seen = [statuses[u] for u in uids if u in statuses]
    return None if not seen else any(s in wanted for s in seen)
