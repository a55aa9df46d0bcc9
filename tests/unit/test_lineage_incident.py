"""Root cause at the incident moment, on fixtures: the symptom's error parsed, conditions dated from snapshot
history and live findings, causes ranked by explanation then onset, background said, the verdict's object and
change. (Through MCP on a running platform: tests/mcp/test_incidents_live.py.)"""

from __future__ import annotations

import time
from typing import Any

import pytest

from ade_platform.lib.dbt.lineage import build_lineage_index
from ade_platform.lib.lineage import incident, trace
from ade_platform.lib.lineage.budget import Probe, run_probes
from ade_platform.lib.lineage.build import LineageInputs, WarehouseInfo, build_lineage
from ade_platform.lib.lineage.error_shapes import parse_error
from ade_platform.lib.lineage.evidence import LiveFindings, Records
from ade_platform.lib.lineage.history import History, VersionRef
from ade_platform.lib.lineage.tables import SchemaHistory, TableState
from tests.helpers import NIGHTLY_JOBS, revenue_dashboard
from tests.unit.test_lineage_cross_stack import P, _manifest

T0 = 1_760_000_000.0  # the materialization
HOUR = 3600.0


def _col(name: str, typ: str, pos: int) -> dict[str, Any]:
    return {"name": name, "type": typ, "nullable": True, "position": pos}


def _table(schema: str, name: str, cols: list[tuple[str, str]]) -> dict[str, Any]:
    return {
        "database": "wh",
        "schema": schema,
        "name": name,
        "table_type": "BASE TABLE",
        "columns": [_col(c, t, i) for i, (c, t) in enumerate(cols, 1)],
    }


ORDERS = [("id", "INTEGER"), ("amount", "DECIMAL(10,2)"), ("status", "VARCHAR")]


def _schema(orders: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    tables = [
        _table("main", "revenue", [("day", "DATE"), ("total", "DECIMAL(10,2)")]),
        _table("raw", "orders", [("id", "INTEGER"), ("amount", "DECIMAL(10,2)"), ("status", "VARCHAR")]),
        _table("main", "stg_orders", ORDERS),
    ]
    if orders is not None:
        tables.append(_table("main", "orders", orders))
    return {"tables": tables}


class MemoryVersions:
    """The store's history, in memory: asset -> [(version, at, data)] oldest first."""

    def __init__(self, assets: dict[str, list[tuple[float, Any]]]):
        self.assets = {
            a: [VersionRef(f"v{i:03d}", at, f"{a}-{i}") for i, (at, _) in enumerate(vs)]
            for a, vs in assets.items()
        }
        self.data = {(a, f"v{i:03d}"): d for a, vs in assets.items() for i, (_, d) in enumerate(vs)}

    def versions(self, asset: str) -> list[VersionRef]:
        return list(reversed(self.assets.get(asset, [])))

    def load(self, asset: str, version: str) -> Any:
        return self.data[(asset, version)]


@pytest.fixture(scope="module")
def index() -> dict[str, Any]:
    return build_lineage_index(_manifest())


def _graph(index: dict[str, Any]) -> dict[str, Any]:
    inputs = LineageInputs(
        index=index,
        dbt_warehouse="wh",
        warehouses={"wh": WarehouseInfo("wh", "duckdb", _schema(ORDERS))},
        bi=revenue_dashboard(
            [
                {
                    "id": "71",
                    "title": "Orders",
                    "sql": "select status, sum(amount) from main.orders group by 1",
                },
                {"id": "72", "title": "Broken", "sql": "select sum(discount) from main.orders"},
            ]
        ),
        dbt_cloud_jobs=NIGHTLY_JOBS,
    )
    return trace.views(build_lineage(inputs))


def _health_snapshots(tile_ok: bool = True, source: str = "error", model: str = "success") -> dict[str, Any]:
    return {
        "dbt_run_results": {
            "metadata": {"generated_at": "2025-10-09T08:53:00Z"},
            "results": [
                {"unique_id": f"model.{P}.stg_orders", "status": "success"},
                {"unique_id": f"model.{P}.orders", "status": model, "message": None},
            ],
        },
        "dbt_sources": {
            "results": [{"unique_id": f"source.{P}.raw.orders", "status": source, "max_loaded_at": "x"}]
        },
        "bi_health_looker": {
            "dashboards": [
                {
                    "id": "7",
                    "status": "ok" if tile_ok else "error",
                    "elements": [
                        {"id": "71", "status": "ok" if tile_ok else "error"},
                        {
                            "id": "72",
                            "status": "error",
                            "error": 'Binder Error: Referenced column "discount" not found',
                        },
                    ],
                }
            ]
        },
        "dbt_cloud_runs": {
            "runs": [{"id": 8, "job_id": 42, "status": "success", "finished_at": "2025-10-09T08:00:00Z"}]
        },
    }


def _records(index: dict[str, Any], history: dict[str, list[tuple[float, Any]]]) -> Records:
    newest = {a: vs[-1][1] for a, vs in history.items()}
    health = trace.Health(
        trace.HealthInputs(
            run_results=newest.get("dbt_run_results"),
            index=index,
            sources=newest.get("dbt_sources"),
            bi_health={"looker": newest["bi_health_looker"]} if "bi_health_looker" in newest else {},
            dbt_cloud_runs=newest.get("dbt_cloud_runs"),
        )
    )
    h = History(MemoryVersions(history))
    refs = {a: h.versions(a)[0] for a in history}
    schemas = {"wh": SchemaHistory(h, "warehouse_schema_wh", "duckdb")}
    cols = {
        f"warehouse:wh:table:wh.{t['schema']}.{t['name']}": {c["name"] for c in t["columns"]}
        for t in newest["warehouse_schema_wh"]["tables"]
    }
    return Records(health=health, history=h, newest=refs, schemas=schemas, table_columns=cols)


def _history(**overrides: Any) -> dict[str, list[tuple[float, Any]]]:
    """One materialization at T0 (health snapshots a few seconds after the schema)."""
    snaps = _health_snapshots(**overrides)
    out: dict[str, list[tuple[float, Any]]] = {"warehouse_schema_wh": [(T0, _schema(ORDERS))]}
    for i, (asset, data) in enumerate(snaps.items()):
        out[asset] = [(T0 + 5 + i, data)]
    return out


def _explain_orders(index: dict[str, Any], live: LiveFindings) -> dict[str, Any]:
    """The incident report from the orders model, over one clean materialization at T0 and the live findings."""
    return incident.explain(
        _graph(index), "dbt:model.shop.orders", _records(index, _history()), live, "duckdb"
    )


def _live_orders(cols: list[tuple[str, str]] | None, at: float) -> dict[str, TableState]:
    table = _table("main", "orders", cols) if cols is not None else None
    return {"warehouse:wh:table:wh.main.orders": TableState("wh.main.orders", table, at)}


RENAMED = [("id", "INTEGER"), ("amount_usd", "DECIMAL(10,2)"), ("status", "VARCHAR")]


def _amount_renamed_now(now: float) -> LiveFindings:
    """Live now: the tile fails on the missing `amount`, and orders has amount_usd in its place."""
    symptom = {
        "status": "error",
        "error": 'Binder Error: Referenced column "amount" not found',
        "observed_at": now,
    }
    return LiveFindings(now=now, symptom=symptom, tables=_live_orders(RENAMED, now))


def test_a_column_renamed_under_a_tile_is_the_cause_and_the_old_stale_source_is_background(index) -> None:
    v = _graph(index)
    now = T0 + 600
    records = _records(index, _history())
    live = _amount_renamed_now(now)
    tile = trace.find_start(v, "tile", "71", "looker")
    report = incident.explain(v, tile, records, live, "duckdb")
    top = report["causes"][0]
    assert (top["cause"], top["object"], top["change"]) == (
        "schema_change",
        "main.orders.amount",
        "renamed to `amount_usd`",
    ), report["causes"]
    assert top["explains_symptom"] and not top["background"]
    assert top["evidence_source"]["source"] == "live" and top["onset"]["from"] == "live"
    assert report["confidence"] == "high" and report["confident"]
    assert "`main.orders.amount` renamed to `amount_usd`" in report["verdict"]
    stale = next(c for c in report["causes"] if c["cause"] == "stale_source")
    assert stale["background"] and "healthy" in stale["background_reason"] and stale["rank"] > 1
    assert report["symptom"]["error_kind"] == "missing_column" and report["symptom"]["columns"] == ["amount"]
    assert report["symptom"]["onset"]["last_healthy_at"] is not None


def test_a_healthy_control_gives_no_confident_verdict(index) -> None:
    v = _graph(index)
    now = T0 + 600
    live = LiveFindings(
        now=now, symptom={"status": "ok", "error": None, "observed_at": now}, tables=_live_orders(ORDERS, now)
    )
    for start in (trace.find_start(v, "tile", "71", "looker"), "dbt:model.shop.orders"):
        report = incident.explain(v, start, _records(index, _history()), live, "duckdb")
        assert not report["confident"] and report["confidence"] in ("low", "none"), report["verdict"]
        assert all(c["background"] for c in report["causes"]), report["causes"]


def test_a_source_that_stopped_loading_after_the_snapshot_leads(index) -> None:
    v = _graph(index)
    now = T0 + 600
    records = _records(index, _history(source="pass"))
    live = LiveFindings(
        now=now,
        symptom={"status": "ok", "error": None, "observed_at": now},
        freshness={
            f"dbt:source.{P}.raw.orders": {
                "status": "error",
                "max_loaded_at": "2025-10-08T00:00:00Z",
                "hours_since_load": 49.0,
                "warn_after": 12,
                "error_after": 24,
                "observed_at": now,
            }
        },
    )
    report = incident.explain(v, trace.find_start(v, "tile", "71", "looker"), records, live, "duckdb")
    top = report["causes"][0]
    assert top["cause"] == "stale_source" and not top["background"], report["causes"]
    assert "stopped loading" in top["change"] and top["evidence_source"]["source"] == "live"
    assert report["confidence"] == "medium"


def test_a_model_failing_in_a_build_outside_ade_is_read_from_the_newer_run_results(index) -> None:
    v = _graph(index)
    now = T0 + 600
    records = _records(index, _history())
    message = 'Binder Error: Referenced column "nope" not found in FROM clause!'
    live = LiveFindings(
        now=now,
        run_results={
            "results": {f"model.{P}.orders": {"status": "error", "message": message}},
            "generated_at": now - 30,
            "observed_at": now,
            "path": "target/run_results.json",
        },
    )
    report = incident.explain(v, "dbt:model.shop.orders", records, live, "duckdb")
    top = report["causes"][0]
    assert (top["cause"], top["node"]) == ("failed_model", "dbt:model.shop.orders"), report["causes"]
    assert (
        top["evidence_source"]["source"] == "live"
        and top["evidence_source"]["file"] == "target/run_results.json"
    )
    assert report["symptom"]["status"] == "failed" and report["confident"]
    # from a table downstream of it, the failed model leads too (not background: it is newer than the snapshot)
    table = incident.explain(v, "warehouse:wh:table:wh.main.orders", records, live, "duckdb")
    assert table["causes"][0]["cause"] == "failed_model"


def test_a_parse_error_without_artifacts_is_the_cause(index) -> None:
    now = T0 + 600
    live = LiveFindings(
        now=now,
        invocation={
            "invocation_id": "abc",
            "command": "build",
            "status": "parse_error",
            "error": "Compilation Error in model orders: unexpected '}'",
            "failed_nodes": [],
            "wrote_artifacts": False,
            "started_at": now - 20,
            "finished_at": now - 15,
        },
    )
    report = _explain_orders(index, live)
    top = report["causes"][0]
    assert top["cause"] == "failed_invocation" and "parse" in top["change"], report["causes"]
    assert report["symptom"]["status"] == "failed" and report["confident"]
    # an older failed invocation than the published results says nothing now
    live.invocation = {**live.invocation, "finished_at": T0 - HOUR, "started_at": T0 - HOUR}
    again = _explain_orders(index, live)
    assert not any(c["cause"] == "failed_invocation" for c in again["causes"])


def test_a_builder_run_that_failed_after_the_last_healthy_state_leads(index) -> None:
    now = T0 + 600
    live = LiveFindings(
        now=now,
        builders={
            "dbt_cloud:job:42": {
                "id": 9,
                "status": "error",
                "finished_at": "2025-10-09T09:05:00Z",
                "status_message": "Database Error in model revenue",
                "observed_at": now,
            }
        },
    )
    report = _explain_orders(index, live)
    top = report["causes"][0]
    assert (top["cause"], top["node"]) == ("failed_builder_run", "dbt_cloud:job:42"), report["causes"]
    assert top["next_tool"] == {"tool": "dbtcloud_get_last_run", "arguments": {"job_id": 42}}


def test_a_tile_that_never_worked_is_its_own_sql(index) -> None:
    v = _graph(index)
    report = incident.explain(
        v,
        trace.find_start(v, "tile", "72", "looker"),
        _records(index, _history()),
        LiveFindings(now=T0 + 60),
        "duckdb",
    )
    top = report["causes"][0]
    assert top["cause"] == "tile_references_missing_column" and top["evidence"]["missing_columns"] == [
        "discount"
    ]
    assert top["explains_symptom"] and report["symptom"]["observed"]["source"] == "cache"


def test_a_change_already_in_the_snapshot_history_is_dated_from_it(index) -> None:
    """The schema sensor caught the rename: live equals the newest snapshot, the onset is that snapshot."""
    v = _graph(index)
    renamed = [("id", "INTEGER"), ("amount", "DECIMAL(10,2)"), ("state", "VARCHAR")]
    history = _history()
    history["warehouse_schema_wh"] = [(T0, _schema(ORDERS)), (T0 + HOUR, _schema(renamed))]
    history["bi_health_looker"].append((T0 + 2 * HOUR, _health_snapshots(tile_ok=False)["bi_health_looker"]))
    now = T0 + 3 * HOUR
    live = LiveFindings(
        now=now,
        symptom={"status": "error", "error": 'column "status" does not exist', "observed_at": now},
        tables=_live_orders(renamed, now),
    )
    report = incident.explain(
        v, trace.find_start(v, "tile", "71", "looker"), _records(index, history), live, "duckdb"
    )
    top = report["causes"][0]
    assert top["object"] == "main.orders.status" and top["change"] == "renamed to `state`"
    assert top["onset"]["from"] == "warehouse_schema_wh" and top["onset"]["first_seen_at"].startswith(
        "2025-10-09T09"
    )
    assert report["symptom"]["onset"]["failing_since"] is not None


@pytest.mark.parametrize(
    ("message", "kind", "columns", "relations"),
    [
        (
            'Binder Error: Referenced column "discount_code" not found in FROM clause!',
            "missing_column",
            ["discount_code"],
            [],
        ),
        (
            "SQL compilation error: error line 1 at position 7 invalid identifier 'AMOUNT'",
            "missing_column",
            ["amount"],
            [],
        ),
        (
            "SQL compilation error: error line 1 at position 7 invalid identifier '…'",
            "missing_column",
            [],
            [],
        ),
        ("Unrecognized name: amount at [1:8]", "missing_column", ["amount"], []),
        ("column o.amount does not exist", "missing_column", ["amount"], ["o"]),
        ("Catalog Error: Table with name orders does not exist!", "missing_relation", [], ["orders"]),
        (
            "SQL compilation error: Object 'DB.S.ORDERS' does not exist or not authorized.",
            "missing_relation",
            [],
            ["db.s.orders"],
        ),
        (
            "Not found: Table proj:ds.orders was not found in location US",
            "missing_relation",
            [],
            ["ds.orders"],
        ),
        ('relation "public.orders" does not exist', "missing_relation", [], ["public.orders"]),
        (
            "Binder Error: No function matches the given name and argument types 'sum(VARCHAR)'",
            "type_mismatch",
            [],
            [],
        ),
        (
            "No matching signature for aggregate function SUM for argument types: STRING",
            "type_mismatch",
            [],
            [],
        ),
        ("permission denied for table orders", "permission", [], []),
        ("Access Denied: Table p:d.t: User does not have permission to query table", "permission", [], []),
        ("the tile did not finish within 60 s", "timeout", [], []),
        ("canceling statement due to statement timeout", "timeout", [], []),
        ('Parser Error: syntax error at or near "form"', "syntax", [], []),
    ],
)
def test_error_messages_of_each_warehouse_become_symptoms(message, kind, columns, relations) -> None:
    shape = parse_error(message)
    assert shape is not None and (shape.kind, list(shape.columns), list(shape.relations)) == (
        kind,
        columns,
        relations,
    )
    assert parse_error(None, "empty").kind == "empty" and parse_error(None) is None


def test_the_budget_lists_what_it_did_not_reach() -> None:
    def slow() -> str:
        time.sleep(0.5)
        return "late"

    probes = [Probe(f"p{i}", "table_schema", f"n{i}", i, (lambda i=i: i)) for i in range(3)]
    probes += [
        Probe("slow", "table_schema", "far", 5, slow),
        Probe("own", "symptom", "s", 0, slow, deadline_s=2),
    ]
    out = run_probes(probes, budget_s=0.2, workers=2)
    assert out.values["p0"] == 0 and out.values["p2"] == 2
    assert out.values["own"] == "late"  # the symptom has a budget of its own
    assert [m["node"] for m in out.not_reached] == ["far"] and "budget" in out.not_reached[0]["why"]


def test_a_change_another_agent_observed_is_dated_from_that_observation(index) -> None:
    """warehouse_get_schema saw the rename at T0+120 (a table_schema observation): that is its onset, not now."""
    from ade_platform.store.observations import Observation

    v = _graph(index)
    seen = _table("main", "orders", RENAMED)
    records = _records(index, _history())
    records.observations = lambda kind, key: (
        [Observation(kind, key, {"exists": True, **seen}, T0 + 120, "warehouse_get_schema")]
        if (kind, key) == ("table_schema", "wh:main.orders")
        else []
    )
    now = T0 + 600
    live = _amount_renamed_now(now)
    top = incident.explain(v, trace.find_start(v, "tile", "71", "looker"), records, live, "duckdb")["causes"][
        0
    ]
    assert top["object"] == "main.orders.amount" and top["onset"]["from"] == "observation"
    assert top["onset"]["first_seen_at"] == "2025-10-09T08:55:20Z"


def _published_run(invocation_id: str, at: float) -> Records:
    run = {"metadata": {"invocation_id": invocation_id}, "results": []}
    h = History(MemoryVersions({"dbt_run_results": [(at, run)]}))
    return Records(
        health=trace.Health(trace.HealthInputs(run_results=run)),
        history=h,
        newest={"dbt_run_results": h.versions("dbt_run_results")[0]},
        schemas={},
        table_columns={},
    )


@pytest.mark.parametrize(("published", "told"), [("inv-1", False), ("inv-0", True)])
def test_a_failed_invocation_whose_own_results_are_published_is_not_told_again(
    published: str, told: bool
) -> None:
    """dbt writes run_results.json a second before its last log line: the invocation the log says failed is this
    very published run (same invocation id), whose failed models are the conditions, not 'failed before writing
    results'. An older published run does not tell a newer failure's story."""
    from ade_platform.lib.lineage.evidence import current_failed_invocation

    now = time.time()
    invocation = {"invocation_id": "inv-1", "status": "error", "finished_at": now, "wrote_artifacts": False}
    found = current_failed_invocation(
        LiveFindings(now=now, invocation=invocation), _published_run(published, now - 1)
    )
    assert (found is not None) is told


def test_a_failing_freshness_step_is_not_what_failed_the_run() -> None:
    from ade_platform.lib.dbt_cloud import is_freshness_step

    assert is_freshness_step({"name": "Invoke dbt with `dbt source freshness`"})
    assert is_freshness_step({"name": "Invoke dbt with `dbt source freshness --select source:raw`"})
    assert not is_freshness_step({"name": "Invoke dbt with `dbt run-operation freshness_gate`"})
    assert not is_freshness_step({"name": "Clone git repository"})


def test_feedback_weighs_down_a_cause_named_wrongly_before(index) -> None:
    """Incidents resolved with cause_was_right=false weigh that kind and node down by the documented factor;
    right verdicts dilute it; with no feedback nothing changes."""
    v = _graph(index)
    tile = trace.find_start(v, "tile", "71", "looker")
    live = _amount_renamed_now(T0 + 600)
    plain = incident.explain(v, tile, _records(index, _history()), live, "duckdb")
    top = plain["causes"][0]
    wrong = incident.Feedback({"schema_change": (0, 3)}, {top["node"]: (0, 3)})
    assert wrong.factor("schema_change", top["node"]) == pytest.approx((1 - 0.2 * 3 / 4) * (1 - 0.3 * 3 / 4))
    assert incident.Feedback({"schema_change": (9, 1)}).factor("schema_change", "x") == pytest.approx(
        1 - 0.2 / 11
    )
    assert incident.Feedback().factor("schema_change", top["node"]) == 1.0
    taught = incident.explain(v, tile, _records(index, _history()), live, "duckdb", feedback=wrong)
    again = next(c for c in taught["causes"] if (c["cause"], c["node"]) == (top["cause"], top["node"]))
    assert again["score"] == pytest.approx(top["score"] * wrong.factor(top["cause"], top["node"]), abs=1e-3)
    others = {(c["cause"], c["node"]): c["score"] for c in plain["causes"] if c["cause"] != "schema_change"}
    assert others == {
        (c["cause"], c["node"]): c["score"] for c in taught["causes"] if c["cause"] != "schema_change"
    }
