"""The cross-stack lineage asset: BI tiles → warehouse tables → dbt nodes → sources, and the builders of each.

It depends on whichever input assets the code location defines (dbt, warehouse schemas, BI inventories, dbt Cloud
jobs, orchestrator runs, the Snowflake repository) and is rebuilt by its own automation sensor whenever any of
them is re-materialized. Its metadata renders each dashboard's chain as a Mermaid graph for operators.
"""

from typing import Any

import dagster as dg

from ade_platform.config import Settings
from ade_platform.defs.lineage.openlineage import openlineage_events_sensor, openlineage_sensors, send_quietly
from ade_platform.defs.resources import StoreResource
from ade_platform.lib.lineage.build import Builder
from ade_platform.lib.lineage.render import mermaid
from ade_platform.lib.lineage.sources import (
    LINEAGE_ASSET,
    OPENLINEAGE_ASSET,
    Topology,
    build_graph,
    graph_assets,
    health_inputs,
    store_read,
)
from ade_platform.lib.lineage.trace import Health, status_of, views, walk

GROUP = "lineage"
_MAX_RENDERED_DASHBOARDS = 5


def topology(settings: Settings) -> Topology:
    return Topology(
        warehouses={name: wh.type for name, wh in settings.warehouses.items()},
        dbt_warehouse=settings.dbt.warehouse if settings.dbt is not None else None,
        builders=tuple(
            Builder(b.system, b.job, list(b.select), list(b.exclude)) for b in settings.lineage.builders
        ),
        namespaces=tuple(sorted(settings.openlineage.receive.namespaces.items())),
    )


def receives_openlineage(settings: Settings) -> bool:
    receive = settings.openlineage.receive
    return receive.enabled or bool(receive.files)


def _openlineage_asset(settings: Settings) -> dg.AssetsDefinition:
    receive = settings.openlineage.receive

    @dg.asset(
        name=OPENLINEAGE_ASSET,
        group_name=GROUP,
        kinds={"python"},
        description="OpenLineage events received by the gateway (its journal in the store) and read from "
        "producers' files, folded per job: the datasets its newest run read and wrote, with their facets, "
        "and its recent run states. Bounded (openlineage.receive). cross_stack_lineage joins it.",
    )
    def openlineage_events(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        from ade_platform.lib.openlineage import collect_received

        writer = store.writer()
        snapshot = collect_received(writer.root, receive)
        prov = writer.publish(OPENLINEAGE_ASSET, snapshot, run_id=context.run.run_id)
        return dg.MaterializeResult(
            metadata={"store_version": prov.version, **snapshot["stats"]},
            data_version=dg.DataVersion(prov.data_version),
        )

    return openlineage_events


def _dashboard_graphs(lineage: dict[str, Any], read) -> str:
    """Markdown with one Mermaid graph per dashboard (its upstream chain, coloured by health)."""
    v = views(lineage)
    health = Health(health_inputs(read, _topology_of(lineage))[0])
    parts = []
    dashboards = [n for n in lineage["nodes"] if n.get("kind") == "dashboard"][:_MAX_RENDERED_DASHBOARDS]
    for dash in dashboards:
        w = walk(v, dash["id"], "upstream", None, 80)
        shown = [v["nodes"][n] for n in w.nodes]
        status = {n["id"]: status_of(health.of(n)) for n in shown}
        parts.append(
            f"### {dash.get('system')} dashboard: {dash.get('name')}\n\n```mermaid\n{mermaid(shown, w.edges, status)}\n```"
        )
    return "\n\n".join(parts) or "No dashboards in the inventory: nothing to render."


def _emit_graph(settings: Settings, lineage: dict[str, Any], log: Any) -> int | None:
    """The graph as OpenLineage static lineage, when openlineage.emit has a transport: how many events went."""
    emit = settings.openlineage.emit
    if not emit.transport:
        return None
    from ade_platform.lib.openlineage.emit import graph_events

    return send_quietly(emit, graph_events(lineage, emit), log)


def _topology_of(lineage: dict[str, Any]) -> Topology:
    return Topology(**lineage["topology"]) if "topology" in lineage else Topology({}, None)


def build_lineage_definitions(settings: Settings, defined_assets: set[str]) -> dg.Definitions:
    topo = topology(settings)
    extra = [_openlineage_asset(settings)] if receives_openlineage(settings) else []
    watch = [openlineage_events_sensor(settings, extra[0])] if extra else []
    defined_assets = defined_assets | {OPENLINEAGE_ASSET} if extra else defined_assets
    inputs = [name for name in graph_assets(topo) if name in defined_assets]

    @dg.asset(
        name=LINEAGE_ASSET,
        group_name=GROUP,
        deps=[dg.AssetKey(name) for name in inputs],
        kinds={"python"},
        automation_condition=dg.AutomationCondition.eager().without(
            ~dg.AutomationCondition.any_deps_missing()
        ),
        description="Cross-stack lineage: BI dashboards and tiles, warehouse tables, dbt models/seeds/snapshots/"
        "sources, Snowflake objects, and the dbt Cloud jobs, Airflow DAGs, Prefect deployments and Dagster jobs "
        "that build each model; every edge says how it was inferred (sql_parse, relation_match, selector, config, "
        "...). lineage_trace and lineage_explain_incident answer from it.",
    )
    def cross_stack_lineage(context: dg.AssetExecutionContext, store: StoreResource) -> dg.MaterializeResult:
        read = store_read(store.reader())
        lineage = build_graph(read, topo)
        versions = lineage["inputs"]
        prov = store.writer().publish(
            LINEAGE_ASSET, lineage, run_id=context.run.run_id, source={"inputs": versions}
        )
        stats = lineage["stats"]
        sent = _emit_graph(settings, lineage, context.log)
        return dg.MaterializeResult(
            metadata={
                "store_version": prov.version,
                "nodes": stats["nodes"],
                "edges": stats["edges"],
                "node_counts": dg.MetadataValue.json(stats["node_counts"]),
                "edges_by_how": dg.MetadataValue.json(stats["edges_by_how"]),
                "unresolved": len(lineage["unresolved"]),
                "inputs": dg.MetadataValue.json(versions),
                "dashboards": dg.MetadataValue.md(_dashboard_graphs(lineage, read)),
                **({"openlineage_events_sent": sent} if sent is not None else {}),
            },
            data_version=dg.DataVersion(prov.data_version),
        )

    sensor = dg.AutomationConditionSensorDefinition(
        "lineage_automation_sensor",
        target=[cross_stack_lineage],
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Rebuilds cross_stack_lineage whenever any asset it joins is re-materialized.",
    )
    return dg.Definitions(
        assets=[cross_stack_lineage, *extra], sensors=[sensor, *watch, *openlineage_sensors(settings)]
    )
