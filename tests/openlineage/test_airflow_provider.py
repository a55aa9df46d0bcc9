"""The real Airflow OpenLineage provider (slow; needs `make orchestrators`): the demo's SQL DAGs run with
`airflow dags test`, the provider sending their events to a gateway's /api/v1/lineage over loopback. The task
joins the graph between the raw tables it reads and the table it writes, and the broken DAG's failure is a
cause in `lineage_explain_incident`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ade_platform.config import REPO_ROOT, OpenLineageEmit, load_settings
from ade_platform.emulators.orchestrators import DEMO_DAGS, TOOLS, airflow_env, openlineage_env
from ade_platform.lib.openlineage.conform import conform
from ade_platform.lib.openlineage.emit import as_dict, graph_events
from ade_platform.lib.openlineage.journal import read_journal
from ade_platform.store import StoreWriter
from ade_platform.supervise import free_port
from tests.auth.support import threaded_gateway
from tests.openlineage.support import fold_and_build, trace_and_explain

pytestmark = pytest.mark.slow
AIRFLOW = TOOLS / "airflow" / "bin" / "airflow"
JOB = "openlineage:job:ade-demo-airflow/ade_demo_sql.summarize_orders"
BROKEN = "openlineage:job:ade-demo-airflow/ade_demo_sql_broken.summarize_orders"


def _provider_installed() -> bool:
    if not AIRFLOW.exists():
        return False
    probe = [str(AIRFLOW.parent / "python"), "-c", "import airflow.providers.openlineage"]
    return subprocess.run(probe, capture_output=True, timeout=120).returncode == 0


def _warehouse(path: Path) -> None:
    import duckdb

    with duckdb.connect(str(path)) as db:
        db.execute("create schema raw")
        db.execute("create table raw.customers as select 1 as id, 'Ada Lovelace' as full_name")
        db.execute("create table raw.orders as select 10 as id, 1 as customer_id, 5.0 as amount")


def test_the_providers_events_join_the_graph(tmp_path: Path) -> None:
    if not _provider_installed():
        pytest.skip(
            "Airflow with apache-airflow-providers-openlineage is not installed: run `make orchestrators`"
        )
    _warehouse(tmp_path / "demo.duckdb")
    config = tmp_path / "ade.yaml"
    config.write_text(
        f"home: {tmp_path / 'home'}\n"
        f"warehouses:\n  demo:\n    type: duckdb\n    path: {tmp_path / 'demo.duckdb'}\n"
        "mcp:\n  toolsets: [lineage]\n"
        "openlineage:\n  receive:\n    enabled: true\n"
    )
    settings = load_settings(config, env={})
    home, events = tmp_path / "airflow", tmp_path / "events"
    home.mkdir()
    events.mkdir()
    bin_dir = REPO_ROOT / ".venv" / "bin"
    with threaded_gateway(settings) as url:
        env = {
            **airflow_env(home, free_port(), DEMO_DAGS),
            **openlineage_env(url.removesuffix("/mcp"), events),
            "ADE_DEMO_ADE": str(bin_dir / "ade"),
            "ADE_CONFIG": str(config),
            "ADE_HOME": str(tmp_path / "home"),
            "ADE_DUCKDB_PATH": str(tmp_path / "demo.duckdb"),
        }
        migrate = subprocess.run(
            [str(AIRFLOW), "db", "migrate"], env=env, capture_output=True, text=True, timeout=600
        )
        assert migrate.returncode == 0, migrate.stderr[-3000:]
        for dag, ok in (("ade_demo_sql", True), ("ade_demo_sql_broken", False)):
            done = subprocess.run(
                [str(AIRFLOW), "dags", "test", dag], env=env, capture_output=True, text=True, timeout=900
            )
            if (
                ok
            ):  # the broken one fails its task; whether `dags test` then exits non-zero is Airflow's affair
                assert done.returncode == 0, done.stderr[-3000:]
    # the composite transport sent each event to the gateway and to the file: the same events
    sent = [json.loads(line) for line in (events / "airflow.jsonl").read_text().splitlines()]
    assert {e["eventType"] for e in sent} >= {"START", "COMPLETE", "FAIL"}
    journaled = read_journal(StoreWriter(settings.store_root).root, 1000)
    assert sorted(e["run"]["runId"] + e["eventType"] for e in journaled) == sorted(
        e["run"]["runId"] + e["eventType"] for e in sent
    )
    graph = fold_and_build(settings)
    assert JOB in {n["id"] for n in graph["nodes"]}
    # in -> graph -> out: the task's event comes out with the provider's job facets and datasets, conformant
    task = next(
        e
        for e in sent
        if e["job"]["name"] == "ade_demo_sql.summarize_orders" and e["eventType"] == "COMPLETE"
    )
    out = next(
        as_dict(e) for e in graph_events(graph, OpenLineageEmit()) if e.job.name == task["job"]["name"]
    )
    conform(out)
    assert out["job"]["facets"] == task["job"]["facets"]
    assert [(d["namespace"], d["name"]) for d in out["outputs"]] == [
        (d["namespace"], d["name"]) for d in task["outputs"]
    ]
    trace, incident = trace_and_explain(settings, "main.customer_order_counts")
    ids = {n["id"] for n in trace["nodes"]}
    assert {JOB, "warehouse:demo:table:demo.raw.orders", "warehouse:demo:table:demo.raw.customers"} <= ids
    causes = [c for c in incident["causes"] if c["cause"] == "failed_builder_run"]
    assert causes and causes[0]["node"] == BROKEN, incident["causes"]
