"""OpenLineage out: what ADE sends is the standard as the client models it, and events in come out with their
facets. Events are journaled as the endpoint journals them, folded, joined, and sent back out through the
client's file transport; every emitted event is rebuilt into the client's classes (lib/openlineage/conform.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from openlineage.client.serde import Serde

from ade_platform.config import OpenLineageEmit
from ade_platform.lib.lineage.build import build_lineage
from ade_platform.lib.openlineage import append_event, check_event
from ade_platform.lib.openlineage.conform import NotConformant, conform
from ade_platform.lib.openlineage.emit import as_dict, graph_events, run_events, send, verdict_event
from ade_platform.lib.openlineage.journal import read_files
from ade_platform.store import StoreWriter
from mcp_bridge.server import build_server
from tests.helpers import call_tool, environment
from tests.openlineage.support import (
    JOB,
    TOKEN,
    fold_and_build,
    publish_warehouse,
    shop_settings,
    task_events,
)
from tests.unit.test_lineage_cross_stack import _inputs, _manifest


def _received(tmp_path: Path) -> tuple[Any, list[dict[str, Any]], dict[str, Any]]:
    settings = shop_settings(tmp_path)
    publish_warehouse(settings)
    sent = [Serde.to_dict(e) for e in task_events(fail=False) + task_events(fail=True)]
    root = StoreWriter(settings.store_root).root
    for event in sent:
        append_event(root, check_event(event), 100)
    return settings, sent, fold_and_build(settings)


def test_events_in_come_out_with_their_facets(tmp_path: Path) -> None:
    _, sent, graph = _received(tmp_path)
    emit = OpenLineageEmit(
        transport={"type": "file", "log_file_path": str(tmp_path / "out.jsonl"), "append": True}
    )
    events = graph_events(graph, emit)
    assert send(emit, events) == len(events) > 0
    written, refused = read_files([tmp_path / "out.jsonl"], 1000, 1 << 20)
    assert refused == 0 and len(written) == len(events)
    for event in written:
        conform(event)
    ours = [e for e in written if e["job"]["name"] == JOB]
    assert len(ours) == 1
    out, original = ours[0], sent[-1]
    assert out["job"]["namespace"] == original["job"]["namespace"]
    assert out["job"]["facets"] == original["job"]["facets"]
    assert {(d["namespace"], d["name"]) for d in out["inputs"]} == {
        (d["namespace"], d["name"]) for d in original["inputs"]
    }
    (written_out,), (sent_out,) = out["outputs"], original["outputs"]
    assert (written_out["namespace"], written_out["name"]) == (sent_out["namespace"], sent_out["name"])
    assert written_out["facets"]["columnLineage"]["fields"] == sent_out["facets"]["columnLineage"]["fields"]


def test_the_dbt_and_bi_graph_goes_out_as_conformant_static_lineage() -> None:
    from ade_platform.lib.dbt.lineage import build_lineage_index

    graph = build_lineage(_inputs(build_lineage_index(_manifest())))
    graph["topology"] = {"warehouses": {"wh": "duckdb"}, "dbt_warehouse": "wh"}
    events = [as_dict(e) for e in graph_events(graph, OpenLineageEmit())]
    names = {e["job"]["name"] for e in events}
    assert any(n.startswith("dbt.model.") for n in names) and any(".tile." in n for n in names)
    models = [e for e in events if e["job"]["name"].startswith("dbt.model.") and e["inputs"]]
    assert models and all(e["outputs"][0]["namespace"] == "duckdb://wh" for e in models)
    for event in events:
        conform(event)


def test_runs_and_the_verdict_conform(tmp_path: Path) -> None:
    settings, _, graph = _received(tmp_path)
    ok, answer = call_tool(
        build_server(settings, only="lineage"),
        "lineage_explain_incident",
        {"start_kind": "table", "start": "main.order_summary"},
    )
    assert ok, answer
    emit = OpenLineageEmit()
    verdict = as_dict(verdict_event(answer, graph, emit))
    facet = verdict["run"]["facets"]["ade_rootCause"]
    assert facet["_schemaURL"].endswith(
        "docs/openlineage/ADERootCauseRunFacet.json#/$defs/ADERootCauseRunFacet"
    )
    assert facet["causes"][0]["cause"] == answer["causes"][0]["cause"]
    assert verdict["inputs"][0]["name"] == "demo.main.order_summary"
    conform(verdict)
    for event in run_events(
        emit,
        "materialize:cross_stack_lineage",
        "r-1",
        "2026-01-01T00:00:00+00:00",
        "2026-01-01T00:00:09+00:00",
        True,
        "boom",
    ):
        conform(as_dict(event))
    broken = copy.deepcopy(verdict)
    broken["run"]["facets"]["ade_rootCause"]["causes"][0].pop("cause")
    with pytest.raises(NotConformant, match="cause"):
        conform(broken)


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda e: e.update(eventType="DONE"), "eventType"),
        (lambda e: e["run"].update(runId="not-a-uuid"), "Run"),
        (lambda e: e["job"]["facets"]["sql"].update(dialect=3), "sql.dialect"),
        (lambda e: e["job"]["facets"].update(myFacet={"_producer": "x", "_schemaURL": "y"}), "myFacet"),
        (lambda e: e["job"]["facets"].update(acme_thing={"_producer": "x"}), "acme_thing"),
        (lambda e: e["outputs"][0].update(extra=1), "extra"),
        (lambda e: e["job"]["facets"]["sql"].update(_schemaURL="https://example.com/other.json"), "differs"),
    ],
)
def test_what_departs_from_the_standard_is_refused(change: Any, where: str) -> None:
    event = Serde.to_dict(task_events(fail=False)[0])
    conform(copy.deepcopy(event))
    change(event)
    with pytest.raises(NotConformant, match=where):
        conform(event)


def test_ade_openlineage_emit_sends_the_graph_now(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ade_platform.cli import main

    settings, _, graph = _received(tmp_path)
    config = settings.config_path
    assert config is not None
    with environment({"OL_TOKEN": TOKEN}):
        assert main(["--config", str(config), "openlineage", "emit"]) == 2
        assert "nowhere to send" in capsys.readouterr().err
        sent = tmp_path / "sent.jsonl"
        with config.open("a") as handle:
            handle.write(f"  emit:\n    transport: {{type: file, log_file_path: {sent}, append: true}}\n")
        assert main(["--config", str(config), "openlineage", "emit"]) == 0
    events, refused = read_files([sent], 1000, 1 << 20)
    assert refused == 0 and len(events) == len(graph_events(graph, OpenLineageEmit())) > 0
    assert f"sent {len(events)} OpenLineage events" in capsys.readouterr().out
