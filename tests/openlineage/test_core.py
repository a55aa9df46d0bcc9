"""The OpenLineage core without a server: dataset names read per the naming spec, folding (any order, bounded),
the journal's bound, and files of JSON lines with bad lines among them."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ade_platform.lib.lineage.relations import RelationKey
from ade_platform.lib.openlineage import append_event, check_event, collect
from ade_platform.lib.openlineage.compact import fold
from ade_platform.lib.openlineage.journal import read_files, read_journal
from ade_platform.lib.openlineage.naming import read_dataset
from ade_platform.store import StoreWriter

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("namespace", "name", "kind", "key"),
    [
        ("postgres://db:5432", "Shop.Public.Orders", "postgres", RelationKey("shop", "public", "orders")),
        (
            "snowflake://acme-prod",
            "ANALYTICS.MAIN.ORDERS",
            "snowflake",
            RelationKey("analytics", "main", "orders"),
        ),
        ("bigquery", "my-proj.Sales.Orders", "bigquery", RelationKey("my-proj", "Sales", "Orders")),
        (
            "duckdb://warehouse/demo.duckdb",
            "demo.main.orders",
            "duckdb",
            RelationKey("demo", "main", "orders"),
        ),
        ("mysql://db:3306", "shop.orders", "mysql", RelationKey("shop", None, "orders")),
        ("trino://t:8080", "hive.web.clicks", "trino", RelationKey("hive", "web", "clicks")),
        ("s3://bucket", "raw/orders.parquet", None, None),
        ("file", "/data/orders.csv", None, None),
    ],
)
def test_dataset_names_read_per_the_naming_spec(
    namespace: str, name: str, kind: str | None, key: Any
) -> None:
    read = read_dataset(namespace, name)
    assert (read.warehouse_type, read.key) == (kind, key)


def _event(
    job: str, run: str, state: str, at: int, inputs: list[str] = (), outputs: list[str] = ()
) -> dict[str, Any]:
    def ds(name: str) -> dict[str, Any]:
        return {"namespace": "postgres://db:5432", "name": name}

    return check_event(
        {
            "eventTime": (T0 + timedelta(minutes=at)).isoformat(),
            "producer": "https://github.com/OpenLineage/OpenLineage/tree/1.0.0/integration/spark",
            "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
            "eventType": state,
            "run": {"runId": run},
            "job": {"namespace": "spark", "name": job},
            "inputs": [ds(n) for n in inputs],
            "outputs": [ds(n) for n in outputs],
        }
    )


RUNS = [str(uuid.UUID(int=i)) for i in range(1, 5)]
EVENTS = [
    _event("load", RUNS[0], "START", 0, ["shop.public.a"], ["shop.public.b"]),
    _event("load", RUNS[0], "COMPLETE", 1),
    _event("load", RUNS[1], "START", 10, ["shop.public.c"], ["shop.public.b"]),
    _event("load", RUNS[1], "FAIL", 11),
    _event("other", RUNS[2], "START", 5, [], ["shop.public.z"]),
]


@settings(max_examples=40, deadline=None)
@given(st.permutations(EVENTS))
def test_folding_does_not_depend_on_arrival_order(events: list[dict[str, Any]]) -> None:
    folded = fold(events)
    load = next(j for j in folded["jobs"] if j["name"] == "load")
    assert load["system"] == "spark"
    assert [(r["run_id"], r["status"]) for r in load["runs"]] == [(RUNS[1], "failed"), (RUNS[0], "success")]
    # the newest run decides what the job reads
    assert [d["name"] for d in load["inputs"]] == ["shop.public.c"]
    assert folded == fold(EVENTS)


def test_folding_is_bounded() -> None:
    many = [_event(f"job{i}", RUNS[0], "COMPLETE", i) for i in range(10)]
    runs = [_event("load", str(uuid.UUID(int=100 + i)), "COMPLETE", i) for i in range(10)]
    folded = fold(many + runs, max_jobs=3, max_runs=4)
    assert len(folded["jobs"]) == 3 and folded["stats"]["dropped_jobs"] == 8
    assert "load" in {j["name"] for j in folded["jobs"]}  # the most recently seen are kept
    assert len(next(j for j in folded["jobs"] if j["name"] == "load")["runs"]) == 4


def test_the_journal_keeps_the_newest_and_files_skip_bad_lines(tmp_path: Path) -> None:
    root = StoreWriter(tmp_path / "store").root
    for i in range(70):
        append_event(root, _event(f"j{i}", RUNS[0], "COMPLETE", i), 50)
    kept = read_journal(root, 50)
    assert len(kept) == 50 and kept[-1]["job"]["name"] == "j69"
    lines = [json.dumps(e) for e in EVENTS] + ["{not json", json.dumps({"eventTime": "yesterday"}), ""]
    folder = tmp_path / "ol"
    folder.mkdir()
    (folder / "events.jsonl").write_text("\n".join(lines))
    events, refused = read_files([folder], 100, 1 << 20)
    assert len(events) == len(EVENTS) and refused == 2
    snapshot = collect(root, [folder], max_events=50, max_event_bytes=1 << 20, max_jobs=10, max_runs=5)
    assert snapshot["stats"]["files"] == len(EVENTS) and snapshot["stats"]["journal"] == 50
    assert snapshot["stats"]["refused_lines"] == 2


def test_events_named_as_dbt_ol_names_them_land_on_the_manifests_nodes() -> None:
    """openlineage-dbt names a DuckDB relation `duckdb://<profile path>` + `database.schema.table` (its processor's
    extract_namespace): such a job's datasets are the tables the manifest's models materialize, not new nodes."""
    from ade_platform.lib.dbt.lineage import build_lineage_index
    from ade_platform.lib.lineage.build import build_lineage
    from tests.unit.test_lineage_cross_stack import P, _inputs, _manifest

    inputs = _inputs(build_lineage_index(_manifest()))
    namespace = "duckdb:///srv/warehouse/wh.duckdb"
    event = _event("x", RUNS[0], "COMPLETE", 0)
    event.update(
        job={"namespace": "dbt", "name": f"dbt-run-{P}.model.{P}.revenue"},
        inputs=[{"namespace": namespace, "name": "wh.main.orders"}],
        outputs=[{"namespace": namespace, "name": "wh.main.revenue"}],
    )
    inputs.openlineage = fold([check_event(event)])
    graph = build_lineage(inputs)
    materialized = {e["from"]: e["to"] for e in graph["edges"] if e["kind"] == "materializes"}
    written = [e["to"] for e in graph["edges"] if e["kind"] == "writes"]
    read = [e["from"] for e in graph["edges"] if e["kind"] == "reads" and e["how"] == "openlineage"]
    assert written == [materialized[f"dbt:model.{P}.revenue"]]
    assert read == [materialized[f"dbt:model.{P}.orders"]]
    assert not [n for n in graph["nodes"] if n.get("kind") == "dataset"]
