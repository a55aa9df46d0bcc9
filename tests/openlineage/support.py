"""A small shop warehouse and an Airflow-like SQL task's OpenLineage events, made with the real client."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ade_platform.config import Settings, load_settings
from ade_platform.lib.lineage.sources import (
    LINEAGE_ASSET,
    OPENLINEAGE_ASSET,
    Topology,
    build_graph,
    store_read,
)
from ade_platform.lib.openlineage import collect_received
from ade_platform.store import StoreReader, StoreWriter

TOKEN = "ol-" + "k" * 40
NAMESPACE = "duckdb://warehouse/demo.duckdb"
PRODUCER = "https://github.com/apache/airflow/tree/providers-openlineage/2.6.0"
JOB = "shop_etl.summarize_orders"
SQL = (
    "INSERT INTO main.order_summary SELECT c.id, count(*) FROM main.orders o JOIN main.customers c USING (id)"
)


def shop_settings(tmp_path: Path, receive: str = "") -> Settings:
    config = tmp_path / "ade.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\n"
        "warehouses:\n  demo:\n    type: duckdb\n    path: demo.duckdb\n"
        "mcp:\n  toolsets: [lineage]\n"
        "openlineage:\n  receive:\n    enabled: true\n    token: ${OL_TOKEN}\n" + receive
    )
    return load_settings(config, env={"OL_TOKEN": TOKEN})


def publish_warehouse(settings: Settings) -> None:
    def table(name: str, *columns: str) -> dict[str, Any]:
        return {
            "database": "demo",
            "schema": "main",
            "name": name,
            "table_type": "BASE TABLE",
            "columns": [{"name": c, "data_type": "INTEGER"} for c in columns],
        }

    StoreWriter(settings.store_root).publish(
        "warehouse_schema_demo",
        {
            "tables": [
                table("orders", "id", "amount"),
                table("customers", "id", "name"),
                table("order_summary", "customer_id", "orders"),
            ]
        },
    )


def _dataset(cls: Any, name: str, **facets: Any) -> Any:
    return cls(namespace=NAMESPACE, name=f"demo.main.{name}", facets=facets)


def task_events(fail: bool, start: datetime | None = None) -> list[Any]:
    """A START and a COMPLETE (or FAIL) of the SQL task, as the Airflow provider sends them."""
    from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
    from openlineage.client.facet_v2 import column_lineage_dataset, error_message_run, sql_job

    start = start or datetime.now(UTC) - timedelta(minutes=5)
    run_id = str(uuid.uuid4())
    lineage = column_lineage_dataset.ColumnLineageDatasetFacet(
        fields={
            "customer_id": column_lineage_dataset.Fields(
                inputFields=[
                    column_lineage_dataset.InputField(
                        namespace=NAMESPACE, name="demo.main.customers", field="id"
                    )
                ]
            ),
            "orders": column_lineage_dataset.Fields(
                inputFields=[
                    column_lineage_dataset.InputField(
                        namespace=NAMESPACE, name="demo.main.orders", field="id"
                    )
                ],
                transformationType="AGGREGATION",
            ),
        }
    )
    job = Job(namespace="airflow", name=JOB, facets={"sql": sql_job.SQLJobFacet(query=SQL)})
    inputs = [_dataset(InputDataset, "orders"), _dataset(InputDataset, "customers")]
    outputs = [_dataset(OutputDataset, "order_summary", columnLineage=lineage)]
    end_facets = (
        {
            "errorMessage": error_message_run.ErrorMessageRunFacet(
                message="Binder Error: no column x", programmingLanguage="SQL"
            )
        }
        if fail
        else {}
    )
    return [
        RunEvent(
            eventType=RunState.START,
            eventTime=start.isoformat(),
            run=Run(runId=run_id),
            job=job,
            inputs=inputs,
            outputs=outputs,
            producer=PRODUCER,
        ),
        RunEvent(
            eventType=RunState.FAIL if fail else RunState.COMPLETE,
            eventTime=(start + timedelta(seconds=30)).isoformat(),
            run=Run(runId=run_id, facets=end_facets),
            job=job,
            inputs=inputs,
            outputs=outputs,
            producer=PRODUCER,
        ),
    ]


def http_client(base_url: str, token: str | None = TOKEN) -> Any:
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import (
        ApiKeyTokenProvider,
        HttpConfig,
        HttpTransport,
        TokenProvider,
    )

    auth = ApiKeyTokenProvider({"apiKey": token}) if token else TokenProvider({})
    config = HttpConfig(url=base_url, endpoint="api/v1/lineage", auth=auth, retry={"total": 0})
    return OpenLineageClient(transport=HttpTransport(config))


def fold_and_build(settings: Settings) -> dict[str, Any]:
    """What the openlineage_events asset and then cross_stack_lineage publish."""
    writer = StoreWriter(settings.store_root)
    snapshot = collect_received(writer.root, settings.openlineage.receive)
    writer.publish(OPENLINEAGE_ASSET, snapshot)
    graph = build_graph(store_read(StoreReader(settings.store_root)), Topology({"demo": "duckdb"}, None))
    writer.publish(LINEAGE_ASSET, graph)
    return graph


def trace_and_explain(settings: Settings, table: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """lineage_trace upstream from a table and lineage_explain_incident from it, through MCP."""
    from mcp_bridge.server import build_server
    from tests.helpers import call_tools

    (ok, trace), (ok2, incident) = call_tools(
        build_server(settings, only="lineage"),
        [
            ("lineage_trace", {"start_kind": "table", "start": table, "direction": "upstream"}),
            ("lineage_explain_incident", {"start_kind": "table", "start": table}),
        ],
    )
    assert ok and ok2, (trace, incident)
    return trace, incident
