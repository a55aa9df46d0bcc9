"""What a live tool's answer observed, as observations for the store (ade_platform/store/observations.py).

One function per live tool turns its answer into (kind, key, state, asset) tuples; the state holds only facts
that stay true until the system changes (a tile's status and error, a table's columns, a column's newest
timestamp, a run's status), never what grows with the clock (ages, row counts, elapsed times), so the store's
deduplication keeps one entry per change. Keys (built by the store module's helpers):

| kind                 | key                                     | asset (Dagster and store)       |
|----------------------|-----------------------------------------|---------------------------------|
| bi_dashboard_health  | looker:dashboard/1                      | bi_health_<tool>                |
| bi_tile_health       | looker:dashboard/1/tile/3               | bi_health_<tool>                |
| table_schema         | <warehouse>:<schema>.<table> (lower)    | warehouse_schema_<warehouse>    |
| source_freshness     | <warehouse>:<schema>.<table> (lower)    | warehouse_freshness_<warehouse> |
| run_status           | dbt_cloud:run/<id>, dbt_cloud:job/<id>, | dbt_cloud_runs,                 |
|                      | <backend>:dag/<dag>[/run/<id>]          | orchestrator_runs_<backend>     |

A job's own key (dbt_cloud:job/<id>, <backend>:dag/<dag>) is written only when the answer is its latest run
whatever its status; a run's key always.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from ade_platform.lib.bi.names import health_asset
from ade_platform.lib.warehouse.names import freshness_asset, schema_asset
from ade_platform.store import Snapshot, StoreReader
from ade_platform.store.observations import (
    Observation,
    dashboard_key,
    job_key,
    latest_observation,
    latest_observations,
    run_key,
    table_key,
    tile_key,
)

DBT_CLOUD_RUNS = "dbt_cloud_runs"


class Observed(NamedTuple):
    kind: str
    key: str
    state: dict[str, Any]
    asset: str | None


def dashboard_health(answer: Mapping[str, Any], facts: Mapping[str, Any]) -> list[Observed]:
    tool, dashboard = facts["tool"], str(answer["dashboard_id"])
    tiles = {
        str(e["element_id"]): {"status": e["status"], "error": e.get("error")}
        for e in answer.get("elements") or []
    }
    asset = health_asset(tool)
    found = [
        Observed(
            "bi_dashboard_health",
            dashboard_key(tool, dashboard),
            {"status": answer["status"], "error": answer.get("error_detail"), "elements": tiles},
            asset,
        )
    ]
    found += [Observed("bi_tile_health", tile_key(tool, dashboard, t), s, asset) for t, s in tiles.items()]
    return found


def table_schema(table: Mapping[str, Any] | None, facts: Mapping[str, Any]) -> list[Observed]:
    """A table read live (describe_table's shape), or None: it does not exist now."""
    warehouse, parts = facts["warehouse"], list(facts["parts"])
    if table is None:
        key, state = table_key(warehouse, parts[-2], parts[-1]), {"exists": False}
    else:  # the table as a schema snapshot holds it: an answer from the snapshot can use it in its place
        key, state = table_key(warehouse, table["schema"], table["name"]), {"exists": True, **table}
    return [Observed("table_schema", key, state, schema_asset(warehouse))]


def freshness(answer: Mapping[str, Any], facts: Mapping[str, Any]) -> list[Observed]:
    warehouse, table = facts["warehouse"], facts["table"]
    key = table_key(warehouse, table["schema"], table["name"])
    state = {"column": answer["timestamp_column"], "max_timestamp": answer["max_timestamp"]}
    return [Observed("source_freshness", key, state, freshness_asset(warehouse))]


def _run_state(answer: Mapping[str, Any], fields: Sequence[str]) -> dict[str, Any]:
    return {f: answer.get(f) for f in fields}


def dbt_cloud_run(answer: Mapping[str, Any], facts: Mapping[str, Any]) -> list[Observed]:
    state = _run_state(answer, ("run_id", "job_id", "status", "status_message", "started_at", "finished_at"))
    found = [Observed("run_status", run_key("dbt_cloud", None, answer["run_id"]), state, DBT_CLOUD_RUNS)]
    if facts.get("latest") and answer.get("job_id") is not None:
        found.append(Observed("run_status", job_key("dbt_cloud", answer["job_id"]), state, DBT_CLOUD_RUNS))
    return found


def orchestrator_run(answer: Mapping[str, Any], facts: Mapping[str, Any]) -> list[Observed]:
    backend, dag = facts["backend"], answer["dag_id"]
    state = _run_state(answer, ("run_id", "state", "status", "start_date", "end_date"))
    asset = f"orchestrator_runs_{backend}"
    found = [Observed("run_status", run_key(backend, dag, answer["run_id"]), state, asset)]
    if facts.get("latest"):
        found.append(Observed("run_status", job_key(backend, dag), state, asset))
    return found


FROM_ANSWER: dict[str, Callable[[Any, Mapping[str, Any]], list[Observed]]] = {
    "bi_check_dashboard_health": dashboard_health,
    "warehouse_get_schema": table_schema,
    "warehouse_detect_schema_drift": table_schema,
    "warehouse_check_freshness": freshness,
    "dbtcloud_poll_run": dbt_cloud_run,
    "dbtcloud_get_last_run": dbt_cloud_run,
    "orchestrator_get_last_run": orchestrator_run,
}


def from_answer(tool: str, answer: Any, facts: Mapping[str, Any]) -> list[Observed]:
    """The observations in a live tool's answer (none for a tool not listed in FROM_ANSWER)."""
    build = FROM_ANSWER.get(tool)
    return build(answer, facts) if build is not None else []


# ---- cached answers that prefer a newer observation to an older snapshot ------------------------------------
def tile_errors(observation: Observation) -> dict[str, str]:
    """Element id -> error, from a bi_dashboard_health observation (the shape the health snapshot gives)."""
    tiles = observation.state.get("elements") or {}
    return {tid: t.get("error") or "error" for tid, t in tiles.items() if t.get("status") == "error"}


def schema_with_observations(
    reader: StoreReader, warehouse: str, snapshot: Snapshot
) -> tuple[dict[str, Any], list[Observation]]:
    """A warehouse schema snapshot's data with the tables read live since it was taken in their place (a table
    observed gone is left out), and those observations; the snapshot's own data when there are none (a stat)."""
    since = snapshot.provenance.materialized_epoch
    seen = latest_observations(reader, "table_schema", prefix=f"{warehouse}:".lower(), since=since)
    if not seen:
        return snapshot.data, []
    newer = {o.key: o for o in seen}
    tables = []
    for table in snapshot.data.get("tables", []):
        found = newer.pop(table_key(warehouse, table["schema"], table["name"]), None)
        if found is None:
            tables.append(table)
        elif found.state.get("exists"):
            tables.append(observed_table(found))
    tables += [observed_table(o) for o in newer.values() if o.state.get("exists")]
    return {**snapshot.data, "tables": tables}, seen


def observed_table(observation: Observation) -> dict[str, Any] | None:
    """The table a table_schema observation saw, in a schema snapshot's shape (None: it was gone)."""
    state = observation.state
    return {k: v for k, v in state.items() if k != "exists"} if state.get("exists") else None


def newer_table(
    reader: StoreReader, warehouse: str, schema: str, name: str, snapshot: Snapshot
) -> Observation | None:
    """A live read of one table newer than the schema snapshot, if any."""
    seen = latest_observation(reader, "table_schema", table_key(warehouse, schema, name))
    return seen if seen is not None and seen.observed_at > snapshot.provenance.materialized_epoch else None


def newer_freshness(
    reader: StoreReader, warehouse: str, table: Mapping[str, Any], column: str, snapshot: Snapshot
) -> Observation | None:
    """A live freshness check of this table and column newer than the freshness snapshot, if any."""
    seen = latest_observation(
        reader, "source_freshness", table_key(warehouse, table["schema"], table["name"])
    )
    if seen is None or seen.observed_at <= snapshot.provenance.materialized_epoch:
        return None
    return seen if str(seen.state.get("column") or "").lower() == column.lower() else None
