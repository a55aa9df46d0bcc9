"""ade_platform.lib.orchestrators: pattern scanning with a time limit, failure signatures, log capping, summaries."""

from __future__ import annotations

import pytest

from ade_platform.lib.orchestrators.logs import cap_log, scrub_secrets
from ade_platform.lib.orchestrators.patterns import detect_patterns, detect_signatures, failure_signature
from ade_platform.lib.orchestrators.runs import RunRecord, duration_seconds, normalize_status, summarize

LOG = (
    "[2026-02-19 04:02:10] INFO - Running command: dbt run --select staging.*\n"
    "[2026-02-19 04:03:21] ERROR - Database Error in model stg_orders (models/staging/stg_orders.sql)\n"
    'column "fulfillment_status" does not exist\n'
    "[2026-02-19 04:03:21] INFO - Run complete\n"
)


def test_spec_example_shape() -> None:
    results = detect_patterns(
        LOG, ["ERROR", "column .* does not exist", r"Database Error in model (\w+)", "absent"]
    )
    assert [r["pattern"] for r in results] == [
        "ERROR",
        "column .* does not exist",
        r"Database Error in model (\w+)",
    ]
    error = results[0]
    assert error["match_count"] == 1 and error["matches"][0]["line_number"] == 2
    assert error["matches"][0]["matched_text"] == "ERROR" and "capture_groups" not in error["matches"][0]
    assert results[1]["matches"][0] == {
        "line_number": 3,
        "matched_text": 'column "fulfillment_status" does not exist',
        "line_snippet": 'column "fulfillment_status" does not exist',
    }
    assert results[2]["matches"][0]["capture_groups"] == ["stg_orders"]


def test_invalid_and_catastrophic_patterns_do_not_stop_the_others() -> None:
    text = "x" * 5000 + "\nRun complete\n"
    # (x+x+)+y runs on RE2 (linear: no match, at once); with a lookahead it needs the backtracking engine,
    # where only the time limit stops it (without it pytest-timeout would fail the test).
    patterns = ["(x+x+)+y", "(x+x+)+(?=y)", "a(b", "Run complete"]
    results = detect_patterns(text, patterns, timeout_seconds=0.3)
    assert [r["pattern"] for r in results] == patterns[1:]
    assert results[0]["error"] == "pattern_timeout" and results[1]["error"] == "invalid_regex"
    assert results[2]["match_count"] == 1


def test_match_count_beyond_the_listed_matches() -> None:
    results = detect_patterns("ERROR\n" * 300, ["ERROR"])
    assert results[0]["match_count"] == 300 and len(results[0]["matches"]) == 200 and results[0]["truncated"]


def test_builtin_signatures_most_specific_first() -> None:
    assert [r["signature"] for r in detect_signatures(LOG)] == ["dbt_missing_column", "dbt_database_error"]
    assert failure_signature("psycopg2.OperationalError: connection refused") == "connection_refused"
    assert failure_signature("Task exited with return code Negsignal.SIGKILL") == "out_of_memory"
    assert (
        failure_signature("Compilation Error in model orders\n  'ref' not found") == "dbt_compilation_error"
    )
    assert failure_signature("ERROR: permission denied for schema analytics") == "permission_denied"
    assert (
        failure_signature('Catalog Error: Table with name "raw_orders" does not exist!')
        == "dbt_missing_relation"
    )
    assert failure_signature("all good") is None


def test_scrub_configured_secrets_and_token_shapes() -> None:
    text = (
        "login with hunter2-the-pass\nAuthorization: Bearer abcdefghijklmnop\n"
        "password=swordfish api_key: 'k-123'\npostgres://etl:pa55word@db:5432/x\n"
        "jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0NTY.SflKxwRJSMeKKF2QT4 done\n"
    )
    clean = scrub_secrets(text, ["hunter2-the-pass"])
    for secret in (
        "hunter2-the-pass",
        "abcdefghijklmnop",
        "swordfish",
        "k-123",
        "pa55word",
        "SflKxwRJSMeKKF2QT4",
    ):
        assert secret not in clean
    assert "password=***" in clean and "postgres://etl:***@db" in clean and "Bearer ***" in clean


def test_cap_keeps_the_tail_from_a_line_start() -> None:
    text = "".join(f"line {i}\n" for i in range(20_000)) + "FATAL the error\n"
    capped = cap_log(text, max_chars=50_000)
    assert capped.truncated and capped.length_chars == len(text) and len(capped.text) <= 50_000
    assert capped.text.endswith("FATAL the error\n") and capped.text.startswith("line ")
    short = cap_log("ok\n")
    assert not short.truncated and short.text == "ok\n"


def _run(run_id: str, state: str, start: str, end: str | None) -> RunRecord:
    return {
        "run_id": run_id,
        "state": state,
        "status": normalize_status(state),
        "execution_date": start,
        "start_date": start,
        "end_date": end,
        "duration_seconds": duration_seconds(start, end),
        "run_type": "scheduled",
        "external_trigger": False,
    }


def test_summary_counts_and_mean_duration() -> None:
    runs = [
        _run("a", "success", "2026-02-17T04:00:00+00:00", "2026-02-17T04:10:00+00:00"),
        _run("c", "running", "2026-02-19T04:00:00Z", None),
        _run("b", "FAILED", "2026-02-18T04:00:00+00:00", "2026-02-18T04:05:00+00:00"),
    ]
    summary = summarize(runs)
    assert [r["run_id"] for r in summary["runs"]] == ["c", "b", "a"]
    assert (summary["total_runs"], summary["success_count"], summary["failure_count"]) == (3, 1, 1)
    assert summary["avg_duration_seconds"] == 450.0
    assert normalize_status("COMPLETED") == "success" and normalize_status("FAILURE") == "failed"
    assert normalize_status("up_for_retry") == "running" and normalize_status("weird") == "other"


def test_a_status_filter_outside_the_shared_vocabulary_matches_its_own_states_only() -> None:
    from ade_platform.lib.orchestrators.runs import matches_status, normalize_status

    def run(state: str) -> dict:
        return {"run_id": state, "state": state, "status": normalize_status(state)}

    assert matches_status(run("CANCELLED"), "cancelled") and matches_status(run("CANCELED"), "Cancelled")
    assert not matches_status(run("PAUSED"), "cancelled") and not matches_status(run("skipped"), "cancelled")
    assert matches_status(run("PAUSED"), "paused") and not matches_status(run("CANCELLED"), "paused")
    assert matches_status(run("COMPLETED"), "success") and matches_status(run("SUCCESS"), "success")
    assert matches_status(run("up_for_retry"), "running") and matches_status(run("PAUSED"), "any")
    assert not matches_status(run("FAILED"), "success")


@pytest.mark.parametrize(("version", "refused"), [("2.19.3", True), ("3.4.25", False), (None, False)])
def test_the_prefect_client_speaks_prefect_3_only(version: str | None, refused: bool) -> None:
    import httpx

    from ade_platform.clients.orchestrators import OrchestratorError
    from ade_platform.clients.orchestrators.prefect import PrefectClient

    def server(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/admin/version"):
            return (
                httpx.Response(200, json=version)
                if version
                else httpx.Response(404, json={"detail": "Not Found"})
            )
        return httpx.Response(200, json={"id": "f1", "name": "hello"})

    client = PrefectClient("http://prefect.test/api", transport=httpx.MockTransport(server))
    if refused:
        with pytest.raises(OrchestratorError, match=r"Prefect 2\.19\.3") as caught:
            client._send("GET", "/flows/name/hello")
        assert caught.value.code == "upstream_error"
    else:
        client._send("GET", "/flows/name/hello")  # answered: the version (or its absence) let it through
