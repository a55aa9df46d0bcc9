"""Code changes between two builds, node by node (lib/lineage/code_changes.py), and dbt's errors in a job's log
(lib/lineage/dbt_log.py). Through MCP on a generated project under git: tests/mcp/test_incidents_code.py."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ade_platform.lib.lineage.code_changes import diff_node, node_codes, output_columns
from ade_platform.lib.lineage.dbt_log import dbt_errors


def _model(sql: str, **extra: object) -> dict:
    node = {"name": "stg", "resource_type": "model", "raw_code": sql, "original_file_path": "models/stg.sql"}
    return {"nodes": {"model.p.stg": {**node, **extra}}}


def _diff(old: dict, new: dict):
    return diff_node(node_codes(old)["model.p.stg"], node_codes(new)["model.p.stg"], "duckdb")


BASE = "select id as order_id, status, amount::decimal(12,2) as amount from {{ source('raw', 'orders') }}"


def test_a_renamed_output_column_is_a_rename_and_a_cast_change_a_retype() -> None:
    new = BASE.replace("status,", "status as order_status,").replace("decimal(12,2)", "varchar")
    change = _diff(_model(BASE), _model(new))
    assert change is not None and change.breaking
    assert change.renamed == [("status", "order_status")] and change.taken == {"status"}
    assert [c for c, _, _ in change.retyped] == ["amount"]
    assert change.describe().startswith("`status` renamed to `order_status`")


def test_a_dropped_column_and_a_config_change_are_said() -> None:
    new = BASE.replace(" status,", "")
    change = _diff(_model(BASE), _model(new, config={"materialized": "incremental"}))
    assert change is not None and change.dropped == ["status"] and change.renamed == []
    assert ("materialized", None, "incremental") in change.config


@pytest.mark.parametrize(
    "refactor",
    [
        "-- tidied\n" + BASE.replace(", ", ",\n    "),
        f"with base as ({BASE})\nselect order_id, status, amount from base",
        BASE.upper().replace("{{ SOURCE('RAW', 'ORDERS') }}", "{{ source('raw', 'orders') }}"),
    ],
)
def test_a_refactor_keeping_the_names_is_not_breaking(refactor: str) -> None:
    change = _diff(_model(BASE), _model(refactor))
    assert change is None or not change.breaking, change


def test_a_reformat_alone_is_no_change_and_a_star_leaves_outputs_unknown() -> None:
    assert _diff(_model(BASE), _model(BASE.replace(" ", "  "))) is None
    assert output_columns("select * from t") is None
    assert output_columns("select a, b as c from t") == [("a", None), ("c", None)]


def test_declared_types_of_a_source_and_a_seed_are_compared() -> None:
    def source(typ: str) -> dict:
        cols = {"amount": {"name": "amount", "data_type": typ}}
        return {"sources": {"source.p.raw.o": {"name": "o", "resource_type": "source", "columns": cols}}}

    old, new = (
        node_codes(source("integer"))["source.p.raw.o"],
        node_codes(source("varchar"))["source.p.raw.o"],
    )
    change = diff_node(old, new)
    assert change is not None and change.retyped == [("amount", "integer", "varchar")]
    seed = {"resource_type": "seed", "name": "s", "config": {"column_types": {"Amount": "decimal"}}}
    retyped = {**seed, "config": {"column_types": {"Amount": "varchar"}}}
    old, new = node_codes({"nodes": {"seed.p.s": seed}}), node_codes({"nodes": {"seed.p.s": retyped}})
    change = diff_node(old["seed.p.s"], new["seed.p.s"])
    assert change is not None and change.retyped == [("amount", "decimal", "varchar")]


LOG = """\x1b[0m14:02:09  1 of 3 OK created sql view model main.stg_orders ............. [OK in 0.05s]
\x1b[0m14:02:10  2 of 3 ERROR creating sql table model main.orders ............. [ERROR in 0.02s]
\x1b[0m14:02:11  Completed with 2 errors, 0 partial successes, and 0 warnings:
\x1b[0m14:02:11
\x1b[0m14:02:11    Runtime Error in model orders (models/orders.sql)
  Binder Error: Referenced column "status" not found in FROM clause!
  Candidate bindings: "order_status"
\x1b[0m14:02:11
\x1b[0m14:02:11    Database Error in model payments (models/marts/payments.sql)
  No function matches the given name and argument types 'sum(VARCHAR)'.
\x1b[0m14:02:11
\x1b[0m14:02:11  Done. PASS=1 WARN=0 ERROR=2 SKIP=0 TOTAL=3
"""


def test_dbt_errors_in_a_job_log_name_the_node_column_and_kind() -> None:
    errors = [e.as_dict() for e in dbt_errors(LOG)]
    assert [(e["node"], e["path"], e["error_kind"]) for e in errors] == [
        ("orders", "models/orders.sql", "missing_column"),
        ("payments", "models/marts/payments.sql", "type_mismatch"),
    ]
    assert errors[0]["columns"] == ["status"] and errors[0]["message"].startswith("Binder Error")


def test_a_log_without_dbt_errors_names_none() -> None:
    assert dbt_errors("") == [] and dbt_errors("task failed: exit code 1\nTraceback ...") == []


@settings(max_examples=60, deadline=None)
@given(
    noise=st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=80), max_size=30),
    name=st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True),
)
def test_the_summary_is_found_among_any_log_lines(noise: list[str], name: str) -> None:
    header = f"12:00:00    Database Error in model {name} (models/{name}.sql)"
    body = f'  Binder Error: Referenced column "c_{name}" not found in FROM clause!'
    log = "\n".join([*noise, header, body, "12:00:01  Done. PASS=0 ERROR=1"])
    found = [e for e in dbt_errors(log) if e.name == name]
    assert found and found[0].shape is not None and found[0].shape.columns == (f"c_{name}",)


@pytest.mark.parametrize(
    ("cause", "strength", "confidence"),
    [
        ("code_change", 3, "high"),
        ("code_change", 0, "low"),
        ("code_edit", 0, "low"),
        ("schema_change", 0, "medium"),
    ],
)
def test_a_code_change_leads_a_confident_verdict_only_when_it_names_what_failed(
    cause: str, strength: int, confidence: str
) -> None:
    from ade_platform.lib.lineage.incident import verdict
    from ade_platform.lib.lineage.symptom import Symptom

    symptom = Symptom("n", "orders", "model", "dbt", "failed", "boom", [], {})
    onset = {"first_seen_at": "2026-01-01T10:00:00Z", "last_absent_at": "2026-01-01T09:00:00Z",
             "at_or_before": False, "from": "dbt_manifest"}  # fmt: skip
    top = {"cause": cause, "object": "stg_orders", "name": "stg_orders", "_strength": strength,
           "change": "`status` renamed to `order_status` in commit 1a2b3c4 by Alice", "onset": onset,
           "background": False}  # fmt: skip
    text, said = verdict(symptom, [top])
    assert said == confidence, text
    assert "`stg_orders`" in text and "1a2b3c4 by Alice" in text


# What the Airflow client renders from Airflow 3's structured log of the demo's dbt_demo_broken task (Airflow 2's
# plain lines are the second form): dbt show --inline fails as a "sql_operation", which names no model but the
# column all the same.
INLINE_LOG = """[2026-11-28T23:20:28.724182Z INFO] {task} \x1b[0m23:20:28  Concurrency: 2 threads (target='dev')
[2026-11-28T23:20:29.160169Z INFO] {task} \x1b[0m23:20:29  Encountered an error:
[2026-11-28T23:20:29.160363Z INFO] {task} Runtime Error
[2026-11-28T23:20:29.160428Z INFO] {task}   Runtime Error in sql_operation inline_query (from remote system.sql)
[2026-11-28T23:20:29.160483Z INFO] {task}     Binder Error: Referenced column "fulfillment_status" not found in FROM clause!
[2026-11-28T23:20:29.160537Z INFO] {task}     Candidate bindings: "payment_count", "customer_id", "amount"
[2026-11-28T23:20:30.372283Z INFO] {task} Command exited with return code 2
"""
AIRFLOW2_LOG = INLINE_LOG.replace("Z INFO] {task} ", "Z] {subprocess.py:106} INFO - ")


@pytest.mark.parametrize("log", [INLINE_LOG, AIRFLOW2_LOG], ids=["airflow3", "airflow2"])
def test_an_inline_query_error_in_a_task_log_names_its_column(log: str) -> None:
    [error] = dbt_errors(log)
    found = error.as_dict()
    assert (found["resource_type"], found["node"], found["path"]) == (
        "sql_operation",
        "inline_query",
        "remote system.sql",
    )
    assert found["error_kind"] == "missing_column" and found["columns"] == ["fulfillment_status"], found
    assert found["message"].startswith("Binder Error: Referenced column"), found["message"]
