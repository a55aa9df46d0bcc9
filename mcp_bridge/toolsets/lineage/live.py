"""The live probes of the lineage join: the symptom now, and the few objects nearest to it, within a budget.

Each probe is one bounded read through the client the single-system tool uses: a tile run as
`bi_check_dashboard_health` runs it (the BI client and lib/bi/tiles.run_with), one table's catalog as
`warehouse_get_schema` reads it (`describe_table`), a source's `max(loaded_at)` as `warehouse_check_freshness`
queries it, the dbt target folder's run_results.json when it is newer than the snapshot (the rule of
lib/dbt/staleness.py), the newest dbt invocation from dbt's log, and each builder's last run (dbt Cloud,
Airflow, Prefect, Dagster). Clients are opened on first use and kept for the gateway's life. Client modules are
imported here, inside functions: the cached path never loads them.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ade_platform.config import Settings
from ade_platform.lib.lineage.budget import Probe, ProbeOutcome, run_probes
from ade_platform.lib.lineage.conditions import epoch_of
from ade_platform.lib.lineage.evidence import FAILED_RUN, LiveFindings
from ade_platform.lib.lineage.probes import PROBES
from ade_platform.lib.lineage.tables import TableState
from ade_platform.lib.lineage.trace import Walk, builders_of
from mcp_bridge.toolsets.lineage.values import ValueProbes

_PLAIN_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]{0,254}$")
# A health result another tool observed this recently is the symptom now: no need to run the tile again.
OBSERVATION_REUSE_SECONDS = 10.0
_MAX_RUN_RESULTS_BYTES = 200 * 1024 * 1024
_MAX_FAILED_TASKS = 3  # failed tasks of one run whose logs are read for dbt's error (within the live budget)
# a tile in a dashboard probe: outcome field -> its name in the probe's finding
_PROBE_TILE_FIELDS = {
    "element_id": "tile",
    "title": "name",
    "status": "status",
    "error": "error",
    "row_count": "row_count",
}


class LiveProber:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._clients: dict[str, Any] = {}
        self._lock = threading.Lock()
        self.values = ValueProbes(settings, self._warehouse)

    def _client(self, key: str, build: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._clients:
                self._clients[key] = build()
            return self._clients[key]

    # --- plan ---------------------------------------------------------------------------------------------------
    def plan(
        self,
        v: dict[str, Any],
        start: str,
        chain: Walk,
        run_results_provenance: Any,
        symptom_observation: dict[str, Any] | None,
        symptom: bool = True,
        since: float | None = None,
    ) -> list[Probe]:
        """The probes for this chain, closest to the symptom first (the symptom's own first of all)."""
        nodes = v["nodes"]
        probes: list[Probe] = []
        start_node = nodes[start]
        if symptom and start_node.get("kind") in ("tile", "dashboard") and symptom_observation is None:
            tool = str(start_node.get("system"))
            if tool in self.settings.bi.tools:
                tile = start_node.get("tile_id") if start_node.get("kind") == "tile" else None
                dash = str(start_node.get("dashboard_id"))
                probes.append(
                    Probe(
                        "symptom",
                        "symptom",
                        start,
                        0,
                        lambda: self.run_bi(tool, dash, tile),
                        deadline_s=self.settings.bi.tile_timeout_seconds + 1.0,
                        facts={"tool": tool, "dashboard": dash, "tile": tile},
                    )
                )
        dbt = self.settings.dbt
        if dbt is not None:
            probes.append(
                Probe(
                    "run_results", "run_results", None, 0, lambda: self.newer_results(run_results_provenance)
                )
            )
            probes.append(Probe("invocation", "invocation", None, 0, self.invocation))
        builders: dict[str, int] = {}
        ordered = sorted(chain.nodes.items(), key=lambda item: item[1]["depth"])
        for node_id, where in ordered:
            node = nodes.get(node_id, {})
            depth = where["depth"]
            if node.get("system") == "warehouse" and node.get("warehouse") in self.settings.warehouses:
                run, facts = self._table_probe(node)
                probes.append(Probe(f"table:{node_id}", "table_schema", node_id, depth, run, facts=facts))
            elif (
                node.get("kind") == "source"
                and node.get("relation")
                and _PLAIN_COLUMN.match(str((node.get("freshness") or {}).get("loaded_at_field") or ""))
            ):  # a loaded_at_field that is an expression is left to dbt's own freshness run
                wh = (dbt.warehouse if dbt else None) or next(iter(self.settings.warehouses), None)
                if wh in self.settings.warehouses:
                    run, facts = self._freshness_probe(wh, node)
                    probes.append(
                        Probe(f"freshness:{node_id}", "source_freshness", node_id, depth, run, facts=facts)
                    )
            if node.get("system") == "dbt":
                for b in builders_of(v, node_id):
                    builders[b["builder"]] = min(depth, builders.get(b["builder"], depth))
            if node.get("kind") in ("job", "dag", "deployment"):
                builders[node_id] = min(depth, builders.get(node_id, depth))
        for builder, depth in sorted(builders.items(), key=lambda item: item[1]):
            run = self._builder_probe(nodes.get(builder, {}))
            if run is not None:
                facts = {"system": nodes[builder].get("system")}
                probes.append(Probe(f"builder:{builder}", "builder_run", builder, depth, run, facts=facts))
        # every relation's values against its baseline profile, each at its distance from the start among the
        # others (the budget reaches the nearest hops first, whatever they are probed for)
        head = [p for p in probes if p.node is None or p.kind == "symptom"]
        hops = [p for p in probes if p not in head] + self.values.plan(v, chain, since)
        return head + sorted(hops, key=lambda p: p.depth)

    def probe(self, probes: list[Probe], budget_ms: float, now: float) -> tuple[LiveFindings, list[Any]]:
        """What the probes found, and the observations to record (lib/live_observations.py shapes)."""
        outcome = run_probes(probes, budget_ms / 1000.0)
        return self.findings(probes, outcome, now), self.observations(probes, outcome)

    def observations(self, probes: list[Probe], outcome: ProbeOutcome) -> list[Any]:
        """The probes' readings as the observations the single-system tools record for the same reads, so the
        next agent, the cached tools and the sensors start from them (deduplicated in the store)."""
        found: list[Any] = []
        for probe in probes:
            value = outcome.values.get(probe.key)
            observe = PROBES[probe.kind].observe
            if value is not None and probe.facts is not None and observe is not None:
                found += observe(probe.facts, value)
        return found

    def findings(self, probes: list[Probe], outcome: ProbeOutcome, now: float) -> LiveFindings:
        live = LiveFindings(now=now, not_reached=outcome.not_reached, elapsed_ms=outcome.elapsed_ms)
        for probe in probes:
            if probe.key in outcome.timings_ms:
                live.probes.append(
                    {"probe": probe.kind, "node": probe.node, "ms": outcome.timings_ms[probe.key]}
                )
            if probe.key in outcome.errors:
                exc = outcome.errors[probe.key]
                live.failed.append(
                    {
                        "probe": probe.kind,
                        "node": probe.node,
                        "error": getattr(exc, "code", None) or "probe_failed",
                    }
                )
            elif probe.key in outcome.values:
                PROBES[probe.kind].keep(live, probe.node, outcome.values[probe.key])
        return live

    # --- the probes ---------------------------------------------------------------------------------------------
    def run_bi(self, tool: str, dashboard_id: str, tile_id: str | None) -> dict[str, Any]:
        """Run one tile (or every tile of a dashboard) now, as bi_check_dashboard_health does."""
        from ade_platform.clients.bi import open_client
        from ade_platform.lib.bi.tiles import outcome_rows, run_with

        bi = self.settings.bi
        client = self._client(f"bi:{tool}", lambda: open_client(self.settings, tool))
        dashboard = client.dashboard(dashboard_id)
        elements = [e for e in dashboard["elements"] if tile_id is None or str(e["id"]) == str(tile_id)]
        outcomes = run_with(client, elements, concurrency=bi.max_concurrency, timeout=bi.tile_timeout_seconds)
        observed = time.time()
        tiles = outcome_rows(outcomes, _PROBE_TILE_FIELDS)
        if tile_id is not None:
            one = (
                tiles[0] if tiles else {"status": "unknown", "error": "the tile is not on the dashboard now"}
            )
            return {**one, "observed_at": observed, "via": f"{tool} tile run"}
        status = "error" if any(t["status"] == "error" for t in tiles) else "ok"
        failing = [t for t in tiles if t["status"] in ("error", "empty")]
        return {
            "status": status,
            "error": next((t["error"] for t in failing if t["error"]), None),
            "tiles": failing,
            "all": tiles,
            "observed_at": observed,
            "via": f"{tool} dashboard run",
        }

    def _warehouse(self, name: str) -> Any:
        from ade_platform.clients.warehouses import open_client

        settings = self.settings
        return self._client(f"wh:{name}", lambda: open_client(settings, name))

    def _table_probe(self, node: dict[str, Any]) -> tuple[Callable[[], TableState], dict[str, Any]]:
        name = str(node.get("warehouse"))
        key = str(node.get("name"))
        parts = key.split(".")
        if self.settings.warehouses[name].type == "duckdb" and len(parts) == 3:
            # DuckDB's catalog is a file name the platform and dbt may spell differently
            parts = parts[1:]

        def run() -> TableState:
            from ade_platform.clients.warehouses import WarehouseError

            try:
                table = self._warehouse(name).describe_table(parts)
            except WarehouseError as exc:
                if exc.code != "table_not_found":
                    raise
                table = None
            return TableState(key, table, time.time())

        return run, {"warehouse": name, "parts": parts}

    def _freshness_probe(
        self, warehouse: str, node: dict[str, Any]
    ) -> tuple[Callable[[], dict[str, Any]], dict[str, Any]]:
        config = dict(node.get("freshness") or {})
        relation = str(node.get("relation"))
        *_, schema, table = relation.split(".")

        def run() -> dict[str, Any]:
            from ade_platform.lib.warehouse import freshness
            from ade_platform.lib.warehouse.sql import max_timestamp_sql

            wh = self.settings.warehouses[warehouse]
            parts = relation.split(".")
            if wh.type == "duckdb" and len(parts) == 3:
                parts = parts[1:]
            sql = max_timestamp_sql(parts, config["loaded_at_field"], wh.type)
            row = self._warehouse(warehouse).query(sql, max_rows=1).rows[0]
            newest, _count = list(row.values())[:2]
            now = datetime.now(UTC)
            hours = freshness.staleness_hours(newest, now)
            return {
                "status": freshness.verdict(
                    hours, config.get("warn_after_hours"), config.get("error_after_hours")
                ),
                "max_loaded_at": freshness.iso(freshness.as_utc(newest)),
                "hours_since_load": hours,
                "loaded_at_field": config["loaded_at_field"],
                "warn_after": config.get("warn_after_hours"),
                "error_after": config.get("error_after_hours"),
                "observed_at": now.timestamp(),
            }

        return run, {"warehouse": warehouse, "table": {"schema": schema, "name": table}}

    def newer_results(self, snapshot_provenance: Any) -> dict[str, Any] | None:
        """The target folder's run_results.json when dbt wrote it after the stored snapshot."""
        from ade_platform.lib.dbt.artifacts import ArtifactError, read_artifact
        from ade_platform.lib.dbt.staleness import newer_file, watched_target

        dbt = self.settings.dbt
        target = watched_target(dbt.target_path, dbt.project_dir) if dbt else None
        if target is None or newer_file(target, "run-results", snapshot_provenance) is None:
            return None
        path = target / "run_results.json"
        try:
            if path.stat().st_size > _MAX_RUN_RESULTS_BYTES:
                return None
            data = read_artifact(target, "run-results")
        except (ArtifactError, OSError):
            return None
        if data is None:
            return None
        results = {
            str(r.get("unique_id")): {
                "status": str(r.get("status") or "").lower(),
                "message": r.get("message"),
            }
            for r in data.get("results") or []
        }
        generated = epoch_of((data.get("metadata") or {}).get("generated_at")) or path.stat().st_mtime
        rel = _relative(path, dbt.project_dir if dbt else None)
        invocation = (data.get("metadata") or {}).get("invocation_id")
        return {
            "results": results,
            "generated_at": generated,
            "invocation_id": invocation,
            "observed_at": time.time(),
            "path": rel,
        }

    def invocation(self) -> dict[str, Any] | None:
        from ade_platform.lib.lineage.contract import newest_invocation

        dbt = self.settings.dbt
        if dbt is None:
            return None
        found = newest_invocation(dbt.project_dir, None, dbt.target_path)
        if found is not None:
            found["observed_at"] = time.time()
        return found

    def _builder_probe(self, node: dict[str, Any]) -> Callable[[], dict[str, Any] | None] | None:
        from ade_platform.clients.orchestrators import configured_backends

        system = node.get("system")
        if system == "dbt_cloud" and self.settings.dbt_cloud is not None and node.get("job_id") is not None:
            job_id = int(node["job_id"])
            return lambda: self._dbt_cloud_last_run(job_id)
        if system in configured_backends(self.settings) and node.get("dag_id"):
            dag_id = str(node["dag_id"])
            return lambda: self._orchestrator_last_run(str(system), dag_id)
        return None

    def _dbt_cloud_last_run(self, job_id: int) -> dict[str, Any] | None:
        from ade_platform.clients.dbt_cloud import open_client
        from ade_platform.lib.dbt_cloud import is_freshness_step, run_record, status_name

        client = self._client("dbt_cloud", lambda: open_client(self.settings))
        run = client.last_run(job_id)
        if run is None:
            return None
        record = run_record(run)
        record["message"] = record.get("status_message")
        if str(record.get("status") or "").lower() in FAILED_RUN and run.get("id") is not None:
            # the failed step's log: dbt's own error in it names the node that failed (lib/lineage/dbt_log.py)
            steps = client.get_run(int(run["id"]), steps=True).get("run_steps") or []
            failed = [s for s in steps if status_name(s.get("status")) in FAILED_RUN] or steps[-1:]
            # a job's "run source freshness" step fails on a stale source without failing the run (the stale
            # source is its own condition, from the freshness results): the step that failed the run comes first
            failed = [s for s in failed if not is_freshness_step(s)] or failed
            _with_dbt_errors(record, "\n".join(str(s.get("logs") or "") for s in failed))
        record["observed_at"] = time.time()
        return record

    def _orchestrator_last_run(self, backend: str, dag_id: str) -> dict[str, Any] | None:
        from ade_platform.clients.orchestrators import open_client

        client = self._client(f"orchestrator:{backend}", lambda: open_client(self.settings, backend))
        runs = client.list_runs(dag_id, limit=1)
        if not runs:
            return None
        run = dict(runs[0])
        run["dag_id"] = dag_id
        run["finished_at"] = run.get("end_date")
        run["started_at"] = run.get("start_date")
        if str(run.get("status") or "").lower() in FAILED_RUN and run.get("run_id"):
            # the failed task's log, read as orchestrator_fetch_logs reads it: dbt's own error names the node
            tasks = client.list_tasks(dag_id, str(run["run_id"]))
            failed = [t for t in tasks if str(t.get("status") or t.get("state") or "").lower() in FAILED_RUN]
            for task in failed[:_MAX_FAILED_TASKS]:
                _with_dbt_errors(run, client.task_log(dag_id, str(run["run_id"]), str(task.get("task_id"))))
                if run.get("dbt_errors"):
                    break
        run["observed_at"] = time.time()
        return run


def _with_dbt_errors(run: dict[str, Any], log: str) -> None:
    """dbt's errors in a failed run's log on the run: `dbt_errors`, and the first as its message (what the
    symptom of a job and the builder condition match against)."""
    from ade_platform.lib.lineage.dbt_log import MAX_LOG_CHARS, dbt_errors

    errors = dbt_errors(log[-MAX_LOG_CHARS:])
    if not errors:
        return
    run["dbt_errors"] = [e.as_dict() for e in errors]
    first = errors[0]
    run["message"] = f"{first.resource_type} {first.name} failed: {first.message}"


def _relative(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return path.name
