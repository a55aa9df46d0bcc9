"""The conditions of the jobs around a chain: the last run of each job, DAG or deployment that builds one of its
dbt nodes (live when probed, else from the run snapshots), and a dbt invocation that failed without writing the
results the other conditions read (a parse error). A mixin of the Gatherer (gather.py)."""

from __future__ import annotations

from typing import Any

from ade_platform.lib.lineage.conditions import (
    Condition,
    Hop,
    Onset,
    condition_on,
    epoch_of,
    live_source,
    short_relation,
)
from ade_platform.lib.lineage.evidence import (
    FAILED_RUN,
    LiveFindings,
    Records,
    current_failed_invocation,
    snapshot_source,
)
from ade_platform.lib.lineage.trace import Walk, run_asset

RUN_RESULTS = "dbt_run_results"


def _look_at(system: Any, ref: Any, builder: str) -> dict[str, Any]:
    """The tool that shows a failed builder's run: dbt Cloud's, an orchestrator's, or (a job only OpenLineage
    events tell of) its trace, whose node carries the run states."""
    if system == "dbt_cloud":
        return {"tool": "dbtcloud_get_last_run", "tool_args": {"job_id": ref}}
    if system == "openlineage":
        return {"tool": "lineage_trace", "tool_args": {"start_kind": "job", "start": builder}}
    return {"tool": None, "tool_args": {"dag_id": ref, "backend": system}}


class JobConditions:
    v: dict[str, Any]
    nodes: dict[str, dict[str, Any]]
    records: Records
    live: LiveFindings
    now: float
    out: list[Condition]
    failed_in_logs: list[
        tuple[str, int]
    ]  # dbt nodes off the chain a job's log names as failed: (node, depth)

    def _source(self, live: bool, observed_at: Any, asset: str) -> dict[str, Any]:
        """Where a condition's evidence came from: a live read at `observed_at`, else the newest snapshot of
        `asset`."""
        return live_source(observed_at) if live else snapshot_source(self.records, asset, self.now)

    def _after_snapshot(self, at: Any, asset: str) -> Onset:
        """The onset of a condition a live read shows and the newest snapshot of `asset` does not: it began at
        `at`, after that snapshot."""
        ref = self.records.ref(asset)
        return Onset(at=at, after=ref.at if ref else None, origin="live")

    def _add(self, cause: str, hop: Hop, **said: Any) -> None:
        """Note a condition on a hop of the chain (conditions.condition_on says how)."""
        self.out.append(condition_on(cause, hop, **said))

    def builder(self, builder: str, depth: int, chain: Walk) -> None:
        node = self.nodes.get(builder, {})
        live = self.live.builders.get(builder)
        history = self.records.health.job_history.get(builder) or []
        run = live if live is not None else (history[0] if history else None)
        if run is None or str(run.get("status") or "").lower() not in FAILED_RUN:
            return
        finished = epoch_of(run.get("finished_at") or run.get("end_date") or run.get("started_at"))
        previous_ok = next(
            (
                epoch_of(r.get("finished_at") or r.get("end_date"))
                for r in history
                if str(r.get("status") or "").lower() == "success"
                and (
                    finished is None or (epoch_of(r.get("finished_at") or r.get("end_date")) or 0) < finished
                )
            ),
            None,
        )
        system = node.get("system")
        ref = node.get("job_id") or node.get("dag_id") or node.get("name")
        builds = sorted(n for n in self.v["builds"].get(builder, ()) if n in chain.nodes) or sorted(
            e["to"]
            for e in self.v["down"].get(builder, ())
            if e["kind"] == "writes" and e["to"] in chain.nodes
        )
        message = run.get("message") or run.get("status_message") or run.get("failure_signature")
        asset = run_asset(system)
        run_id = run.get("run_id") or run.get("id")
        evidence = {
            "run_id": run_id,
            "status": run.get("status"),
            "finished_at": run.get("finished_at") or run.get("end_date"),
            "message": message,
            "builds": builds[:20],
        }
        self._add(
            "failed_builder_run",
            (builder, node, depth),
            facts={"run_id": run_id, "builds": ", ".join(self.nodes[b].get("name") or b for b in builds[:5])},
            evidence=evidence,
            source=self._source(live is not None, (live or {}).get("observed_at"), asset),
            onset=Onset(at=finished, after=previous_ok, origin="live" if live is not None else asset),
            **_look_at(system, ref, builder),
            object=f"{system} {node.get('kind')} {node.get('name')}",
            message=message,
        )
        self._failed_in_log(run, (builder, node, depth), chain)

    def _failed_in_log(self, run: dict[str, Any], job: Any, chain: Walk) -> None:
        """dbt's errors in the failed run's log (read live, dbt_log.py): each dbt node it names failed, said as
        a failed model is, so the explain goes on from it; one off the chain is walked from (incident.py)."""
        builder, node, depth = job
        for error in (run.get("dbt_errors") or [])[:10]:
            found = self._dbt_node(str(error.get("node") or ""), str(error.get("resource_type") or ""))
            if found is None:
                continue
            where = chain.nodes.get(found)
            hop_depth = where["depth"] if where else depth + 1
            if where is None:
                self.failed_in_logs.append((found, hop_depth))
            target = self.nodes[found]
            relation = target.get("relation")
            message = str(error.get("message") or "")[:500] or None
            self._add(
                "failed_model",
                (found, target, hop_depth),
                evidence={
                    "run_status": "error",
                    "message": message,
                    "from_log_of": builder,
                    "run_id": run.get("run_id") or run.get("id"),
                },
                source={**live_source(run.get("observed_at") or self.now), "log_of": node.get("name")},
                onset=Onset(at=epoch_of(run.get("finished_at") or run.get("end_date")), origin="live"),
                relations=frozenset(
                    r for r in (relation, short_relation(relation or ""), target.get("name")) if r
                ),
                message=message,
            )

    def _dbt_node(self, name: str, resource_type: str) -> str | None:
        """The graph's dbt node of that name (and kind, when the log says it)."""
        if not name:
            return None
        for node_id, node in self.nodes.items():
            same_kind = not resource_type or node.get("kind") in (resource_type, None)
            if node.get("system") == "dbt" and node.get("name") == name and same_kind:
                return node_id
        return None

    def invocation(self, chain: Walk) -> None:
        inv = current_failed_invocation(self.live, self.records)
        if inv is None:
            return
        finished = inv.get("finished_at") or inv.get("started_at")
        dbt_nodes = [
            (w["depth"], n) for n, w in chain.nodes.items() if self.nodes.get(n, {}).get("system") == "dbt"
        ]
        if not dbt_nodes:
            return
        failed = set(inv.get("failed_nodes") or ())
        hit = sorted(
            (d, n)
            for d, n in dbt_nodes
            if (self.nodes[n].get("unique_id") in failed or self.nodes[n].get("name") in failed)
        )
        depth, node = (hit or sorted(dbt_nodes))[0]
        at_parse = inv.get("status") == "parse_error"
        command = inv.get("command") or "dbt"
        error = inv.get("error")
        evidence = {
            "invocation_id": inv.get("invocation_id"),
            "command": command,
            "status": inv.get("status"),
            "error": error,
            "failed_nodes": sorted(failed)[:20],
            "wrote_artifacts": bool(inv.get("wrote_artifacts")),
        }
        stage = "at parse (no artifacts written)" if at_parse else "before writing results"
        self._add(
            "failed_invocation",
            (node, self.nodes[node], depth),
            facts={"stage": stage, "at_parse": " at parse, writing no artifacts" if at_parse else ""},
            evidence=evidence,
            source={**live_source(inv.get("observed_at") or self.now), "file": "dbt.log"},
            onset=self._after_snapshot(finished, RUN_RESULTS),
            object=f"`dbt {command}`",
            message=error,
            name=command,
        )
