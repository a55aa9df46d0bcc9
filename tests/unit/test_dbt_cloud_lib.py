"""Shaping of dbt Cloud API payloads (ade_platform/lib/dbt_cloud.py)."""

from __future__ import annotations

import pytest

from ade_platform.lib import dbt_cloud as lib


def test_statuses_and_times() -> None:
    assert [lib.status_name(c) for c in (1, 2, 3, 10, 20, 30, 99, None)] == [
        "queued", "starting", "running", "success", "error", "cancelled", "unknown", "unknown",
    ]  # fmt: skip
    assert lib.iso("2026-02-19 06:20:15.123456+00:00") == "2026-02-19T06:20:15Z"
    assert lib.seconds_between("2026-02-19T06:20:15Z", "2026-02-19 06:24:30+00:00") == 255.0
    assert lib.seconds_between(None, "2026-02-19T06:24:30Z") is None


def test_canonical_runs() -> None:
    """An agent's steps-override run never stands for the job; the job's own steps and an operator's override do;
    a run listed without its trigger cannot be told apart and does not either."""
    agent = lib.agent_cause("Agent-triggered: rebuild stg_orders")
    assert agent.endswith(lib.AGENT_CAUSE_MARK)
    runs = {
        "scheduled": {"trigger": {"cause": "Scheduled run", "steps_override": None}},
        "agent_job_steps": {"trigger": {"cause": agent, "steps_override": None}},
        "operator_override": {"trigger": {"cause": "hotfix by ops", "steps_override": ["dbt run -s x"]}},
        "agent_override": {"trigger": {"cause": agent, "steps_override": ["dbt run -s x"]}},
        "no_trigger": {"trigger": None},
    }
    assert {name: lib.canonical_run(run) for name, run in runs.items()} == {
        "scheduled": True,
        "agent_job_steps": True,
        "operator_override": True,
        "agent_override": False,
        "no_trigger": False,
    }
    record = lib.run_record({"id": 9, "status": 10, **runs["agent_override"]})
    assert (
        record["trigger_cause"] == "Agent-triggered: rebuild stg_orders"
    )  # the mark is ADE's, not the agent's
    assert record["started_by_agent"] and record["steps_override"] == ["dbt run -s x"]
    answer = lib.last_run_answer(record)
    assert answer["started_by_agent"] and answer["steps_override"] == ["dbt run -s x"]


def test_checked_trigger() -> None:
    policy = {
        "triggerable": [7],
        "allow_steps_override": True,
        "allow_full_refresh": False,
        "secret": "dbtc_s3cr3t_t0ken",
    }
    assert lib.checked_trigger(7, None, **policy) is None
    assert lib.checked_trigger(7, ["dbt run -s x"], **policy) == ["dbt run --select x"]
    with pytest.raises(lib.TriggerRefused) as refused:
        lib.checked_trigger(8, None, **policy)
    assert refused.value.code == "trigger_not_allowed"
    with pytest.raises(lib.TriggerRefused) as refused:
        lib.checked_trigger(7, ["dbt build"], **{**policy, "allow_steps_override": False})
    assert refused.value.code == "steps_override_refused" and "allow_steps_override" in refused.value.detail
    with pytest.raises(lib.TriggerRefused) as refused:
        lib.checked_trigger(7, ["dbt seed", "dbt build --target prod"], **policy)
    assert refused.value.extra == {"step_index": 1, "token": "--target"}
    # a token that is (a piece of) the API token is never shown
    for step in ("dbt build dbtc_s3cr3t_t0ken", "dbt dbtc_s3cr3t_t0ken", "dbt build --dbtc_s3cr3t"):
        with pytest.raises(lib.TriggerRefused) as refused:
            lib.checked_trigger(7, [step], **policy)
        assert "s3cr3t" not in refused.value.detail and refused.value.extra["token"] == "***", step


def test_run_record_and_last_run() -> None:
    run = {
        "id": 5, "job_definition_id": 7, "status": 20, "status_message": "Step 1 failed",
        "created_at": "2026-02-19 06:20:00+00:00", "started_at": "2026-02-19 06:20:15+00:00",
        "finished_at": "2026-02-19 06:21:15+00:00", "trigger": {"cause": "Scheduled run"}, "git_sha": "abc",
    }  # fmt: skip
    record = lib.run_record(run)
    assert record["status"] == "error" and record["duration_seconds"] == 60.0
    assert record["triggered_by"] == "scheduler"
    answer = lib.last_run_answer(record)
    assert answer["status"] == "Error" and answer["cause"] == "Scheduled run" and answer["run_id"] == 5


def test_freshness_rows_and_summary() -> None:
    sources = {
        "metadata": {"dbt_version": "1.11.0"},
        "results": [
            {"unique_id": "source.p.raw.orders", "status": "warn", "max_loaded_at": "2026-02-17T12:00:00+00:00",
             "max_loaded_at_time_ago_in_s": 151200.0},
            {"unique_id": "source.p.raw.payments", "status": "runtime error", "error": "relation missing"},
        ],
    }  # fmt: skip
    rows = lib.freshness_rows(sources)
    assert [(r["source_name"], r["table_name"], r["status"]) for r in rows] == [
        ("raw", "orders", "warn"), ("raw", "payments", "runtime error"),
    ]  # fmt: skip
    assert rows[0]["age_seconds"] == 151200.0 and rows[1]["error"] == "relation missing"
    summary = lib.artifact_summary("sources.json", sources)
    assert summary["results_by_status"] == {"warn": 1, "runtime error": 1}
    assert lib.runs_freshness({"execute_steps": ["dbt  source freshness"]})
    assert not lib.runs_freshness({"execute_steps": ["dbt build"]})
