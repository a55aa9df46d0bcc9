"""Which store assets the cross-stack lineage joins, and reading whichever of them exist.

Reading goes through a callable (asset name -> (data, version) or None when never materialized), so the graph
can be built from anything that holds the assets; `store_read` makes one from a store reader.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ade_platform.lib.lineage.build import Builder, LineageInputs, WarehouseInfo, build_lineage
from ade_platform.lib.lineage.trace import HealthInputs
from ade_platform.lib.warehouse.names import drift_asset, schema_asset
from ade_platform.store import SnapshotNotFound, StoreReader

Read = Callable[[str], "tuple[Any, str] | None"]
BI_TOOLS = ("looker", "metabase")
BACKENDS = ("airflow", "prefect", "dagster")
LINEAGE_ASSET = "cross_stack_lineage"
OPENLINEAGE_ASSET = "openlineage_events"


@dataclass(frozen=True)
class Topology:
    """What is configured: the warehouses (name -> type), the one dbt builds into, the builders mapping."""

    warehouses: dict[str, str]
    dbt_warehouse: str | None
    builders: tuple[Builder, ...] = ()
    namespaces: tuple[tuple[str, str], ...] = ()  # OpenLineage dataset namespace -> warehouse name


def store_read(reader: StoreReader) -> Read:
    """The reading callable of a store: an asset's newest (data, version), None when never materialized."""

    def read(asset: str) -> tuple[Any, str] | None:
        try:
            snap = reader.latest(asset)
        except SnapshotNotFound:
            return None
        return snap.data, snap.version

    return read


def graph_assets(topology: Topology) -> list[str]:
    """Every asset the graph may be built from (those never materialized are skipped when reading)."""
    names = ["dbt_lineage_index", "dbt_manifest", *(schema_asset(w) for w in topology.warehouses)]
    names += [f"bi_inventory_{t}" for t in BI_TOOLS]
    names += ["dbt_cloud_jobs", *(f"orchestrator_runs_{b}" for b in BACKENDS), "snowflake_object_repository"]
    return [*names, OPENLINEAGE_ASSET]


def health_assets(topology: Topology) -> list[str]:
    """The run-level assets health is joined from (a node's tests are in the graph: the dbt index is not read)."""
    names = [
        "dbt_run_results",
        "dbt_sources",
        *(drift_asset(w) for w in topology.warehouses),
    ]
    names += [f"bi_health_{t}" for t in BI_TOOLS]
    names += ["dbt_cloud_runs", *(f"orchestrator_runs_{b}" for b in BACKENDS), OPENLINEAGE_ASSET]
    return names


def _read_all(read: Read, names: Iterable[str]) -> tuple[dict[str, Any], dict[str, str]]:
    data: dict[str, Any] = {}
    versions: dict[str, str] = {}
    for name in dict.fromkeys(names):
        got = read(name)
        if got is not None:
            data[name], versions[name] = got
    return data, versions


def lineage_inputs(read: Read, topology: Topology) -> tuple[LineageInputs, dict[str, str]]:
    data, versions = _read_all(read, graph_assets(topology))
    inputs = LineageInputs(
        index=data.get("dbt_lineage_index"),
        dbt_warehouse=topology.dbt_warehouse,
        warehouses={
            name: WarehouseInfo(name, wh_type, data.get(schema_asset(name)))
            for name, wh_type in topology.warehouses.items()
        },
        bi={t: data[f"bi_inventory_{t}"] for t in BI_TOOLS if f"bi_inventory_{t}" in data},
        dbt_cloud_jobs=data.get("dbt_cloud_jobs"),
        orchestrators={
            b: data[f"orchestrator_runs_{b}"] for b in BACKENDS if f"orchestrator_runs_{b}" in data
        },
        snowflake_repository=data.get("snowflake_object_repository"),
        builders=list(topology.builders),
        source_freshness=source_freshness(data.get("dbt_manifest")),
        openlineage=data.get(OPENLINEAGE_ASSET),
        openlineage_namespaces=dict(topology.namespaces),
    )
    return inputs, versions


_PERIOD_HOURS = {"minute": 1 / 60, "hour": 1.0, "day": 24.0}


def _hours(threshold: Any) -> float | None:
    if not isinstance(threshold, dict) or not threshold.get("count") or not threshold.get("period"):
        return None
    factor = _PERIOD_HOURS.get(str(threshold["period"]).lower())
    return float(threshold["count"]) * factor if factor else None


def source_freshness(manifest: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per dbt source with a `loaded_at_field` and a threshold: the field and the thresholds in hours (what a live
    `max(loaded_at)` is judged with). Newer dbt versions put both under `config`."""
    out: dict[str, dict[str, Any]] = {}
    for uid, src in ((manifest or {}).get("sources") or {}).items():
        config = src.get("config") or {}
        field_name = config.get("loaded_at_field") or src.get("loaded_at_field")
        fresh = config.get("freshness") or src.get("freshness") or {}
        warn, error = _hours(fresh.get("warn_after")), _hours(fresh.get("error_after"))
        if field_name and (warn is not None or error is not None):
            out[uid] = {"loaded_at_field": field_name, "warn_after_hours": warn, "error_after_hours": error}
    return out


def health_inputs(read: Read, topology: Topology) -> tuple[HealthInputs, dict[str, str]]:
    data, versions = _read_all(read, health_assets(topology))
    return (
        HealthInputs(
            run_results=data.get("dbt_run_results"),
            sources=data.get("dbt_sources"),
            drift={w: data[drift_asset(w)] for w in topology.warehouses if drift_asset(w) in data},
            bi_health={t: data[f"bi_health_{t}"] for t in BI_TOOLS if f"bi_health_{t}" in data},
            dbt_cloud_runs=data.get("dbt_cloud_runs"),
            orchestrators={
                b: data[f"orchestrator_runs_{b}"] for b in BACKENDS if f"orchestrator_runs_{b}" in data
            },
            openlineage=data.get(OPENLINEAGE_ASSET),
        ),
        versions,
    )


def table_columns(read: Read, topology: Topology, lineage: dict[str, Any]) -> dict[str, set[str]]:
    """Columns of every warehouse table node, from the schema snapshots (for the tile column check)."""
    from ade_platform.lib.lineage.relations import make_key

    out: dict[str, set[str]] = {}
    for name, wh_type in topology.warehouses.items():
        got = read(schema_asset(name))
        if got is None:
            continue
        for table in got[0].get("tables") or []:
            key = make_key(table.get("database"), table.get("schema"), table.get("name") or "", wh_type)
            out[f"warehouse:{name}:table:{key.dotted}"] = {
                str(c.get("name") or "").lower() for c in table.get("columns") or []
            }
    return out


def build_graph(read: Read, topology: Topology) -> dict[str, Any]:
    """The `cross_stack_lineage` snapshot: the graph, the input versions it was built from, the topology."""
    inputs, versions = lineage_inputs(read, topology)
    lineage = build_lineage(inputs)
    lineage["inputs"] = versions
    lineage["topology"] = {"warehouses": dict(topology.warehouses), "dbt_warehouse": topology.dbt_warehouse}
    return lineage
