"""OpenLineage in, through the gateway's real HTTP endpoint and the MCP lineage tools: an Airflow-like SQL task's
events, sent by the real openlineage-python client over loopback, make `lineage_trace` from the table it writes
reach its inputs, and its FAIL event a cause in `lineage_explain_incident`."""

from __future__ import annotations

from pathlib import Path

from ade_platform.lib.lineage.sources import OPENLINEAGE_ASSET
from ade_platform.store import StoreReader
from tests.auth.support import threaded_gateway
from tests.openlineage.support import (
    JOB,
    fold_and_build,
    http_client,
    publish_warehouse,
    shop_settings,
    task_events,
    trace_and_explain,
)

JOB_NODE = f"openlineage:job:airflow/{JOB}"


def test_a_sql_tasks_events_join_the_graph_and_its_failure_is_a_cause(tmp_path: Path) -> None:
    settings = shop_settings(tmp_path)
    publish_warehouse(settings)
    with threaded_gateway(settings) as url:
        client = http_client(url.removesuffix("/mcp"))
        for event in task_events(fail=False) + task_events(fail=True):
            client.emit(event)
    graph = fold_and_build(settings)
    folded = StoreReader(settings.store_root).latest(OPENLINEAGE_ASSET).data
    job = folded["jobs"][0]
    assert folded["stats"]["events"] == 4 and [r["status"] for r in job["runs"]] == ["failed", "success"]
    assert job["system"] == "airflow" and job["facets"]["sql"]["query"].startswith("INSERT INTO")
    # the datasets are the warehouse's own table nodes, not nodes of their own
    assert not [n for n in graph["nodes"] if n.get("kind") == "dataset"]
    assert {(c["from"], c["from_column"], c["to_column"]) for c in graph["column_edges"]} == {
        ("warehouse:demo:table:demo.main.customers", "id", "customer_id"),
        ("warehouse:demo:table:demo.main.orders", "id", "orders"),
    }

    trace, incident = trace_and_explain(settings, "main.order_summary")
    by_id = {n["id"]: n for n in trace["nodes"]}
    assert {"warehouse:demo:table:demo.main.orders", "warehouse:demo:table:demo.main.customers"} <= set(by_id)
    assert by_id[JOB_NODE]["status"] == "failed"
    assert {(e["from"], e["kind"], e["how"]) for e in trace["edges"]} >= {
        ("warehouse:demo:table:demo.main.orders", "reads", "openlineage"),
        (JOB_NODE, "writes", "openlineage"),
    }
    failed = [c for c in incident["causes"] if c["cause"] == "failed_builder_run"]
    assert failed and failed[0]["node"] == JOB_NODE, incident["causes"]
    assert "Binder Error" in str(failed[0]["evidence"]["message"])
