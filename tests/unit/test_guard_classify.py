"""Classifier: a table-driven corpus (guard_corpus.jsonl) plus targeted cases the corpus cannot express."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ade_platform.lib.guard import GuardPolicy, classify_sql, decide

CORPUS_PATH = Path(__file__).with_name("guard_corpus.jsonl")
CORPUS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS_PATH.read_text().splitlines() if line.strip()
]


def _has_reason(reasons: list[str], wanted: str) -> bool:
    return any(r == wanted or r.startswith(wanted) for r in reasons)


@pytest.mark.parametrize("case", CORPUS, ids=[f"{i:03d}-{c['expected']}" for i, c in enumerate(CORPUS)])
def test_corpus(case: dict[str, Any]) -> None:
    result = classify_sql(case["sql"], GuardPolicy(**case.get("policy", {})))
    assert result.classification == case["expected"], (case["why"], result.reasons)
    if "reason" in case:
        assert _has_reason(result.reasons, case["reason"]), (case["why"], result.reasons)
    assert all(o == o.upper() or o.startswith("<LOCATION") for o in result.objects)


def test_corpus_is_broad() -> None:
    counts = Counter(c["expected"] for c in CORPUS)
    assert len(CORPUS) >= 150
    assert all(counts[k] >= 20 for k in ("METADATA", "SCALAR", "DATA", "WRITE")), counts
    assert all(c["why"].strip() for c in CORPUS)
    assert len({c["sql"] for c in CORPUS}) == len(CORPUS), "duplicate statements"
    # Every attack of the threat list has at least one entry.
    wanted = [
        "value_aggregate:MAX", "value_aggregate:MIN", "value_aggregate:ANY_VALUE", "value_aggregate:LISTAGG",
        "value_aggregate:ARRAY_AGG", "value_aggregate:MODE", "group_by", "window_function", "pivot",
        "filter_predicate", "set_operation:UNION", "ambiguous_comment", "lookalike_metadata", "multi_statement",
        "session_reach:RESULT_SCAN", "session_reach:LAST_QUERY_ID", "session_reach:DESCRIBE_RESULT",
        "session_reach:SESSION_VARIABLE", "session_reach:PIPE_OPERATOR", "session_object:TEMPORARY",
        "opaque_code:EXECUTE", "opaque_code:CALL", "data_egress:COPY_INTO_LOCATION",
        "session_state:USE", "session_state:SET", "unknown_table_function", "side_effect_function",
        "quoted_function_name", "unverified_function", "stage_read",
    ]  # fmt: skip
    reasons = {c.get("reason", "") for c in CORPUS}
    missing = [w for w in wanted if not any(r.startswith(w) for r in reasons)]
    assert not missing


def test_cte_names_are_not_objects_but_their_bodies_are() -> None:
    sql = (
        "with orders as (select * from raw.shop.orders), customers as (select * from raw.shop.customers) "
        "select * from orders join customers using (customer_id)"
    )
    result = classify_sql(sql, GuardPolicy())
    assert result.objects == ["RAW.SHOP.ORDERS", "RAW.SHOP.CUSTOMERS"]


def test_every_nesting_site_is_collected() -> None:
    sql = (
        "WITH a AS (SELECT * FROM t_cte) "
        "SELECT (SELECT MAX(x) FROM t_scalar), * FROM a "
        "JOIN t_join ON TRUE, LATERAL (SELECT * FROM t_lateral) l "
        "WHERE EXISTS (SELECT 1 FROM t_where) "
        "UNION ALL SELECT *, 1, 2, 3 FROM (SELECT * FROM t_derived) d "
        "UNION ALL SELECT * FROM IDENTIFIER('db.s.t_identifier')"
    )
    objects = set(classify_sql(sql, GuardPolicy()).objects)
    expected = {"T_CTE", "T_SCALAR", "T_JOIN", "T_LATERAL", "T_WHERE", "T_DERIVED", "DB.S.T_IDENTIFIER"}
    assert expected <= objects
    assert "A" not in objects


@pytest.mark.parametrize(
    ("sql", "stats", "names"),
    [
        ("SELECT * FROM users", True, True),
        ("SELECT id, email FROM users LIMIT 10", True, True),
        ("SELECT * FROM users WHERE email IS NULL", True, True),
        ("SELECT * FROM users WHERE ssn = '1'", False, True),
        ("SELECT IFF(ssn = '1', NULL, 1) FROM users", False, True),
        ("SELECT id FROM users ORDER BY (ssn = '1') DESC LIMIT 1", False, True),
        ("SELECT * FROM users u JOIN guesses g ON u.ssn = g.v", False, True),
        ("SELECT * FROM t PIVOT(COUNT(id) FOR k IN (ANY))", False, False),
        ("SELECT * FROM t PIVOT(COUNT(id) FOR k IN (SELECT k FROM t))", False, False),
        ("SELECT 1; SELECT * FROM users", False, False),
    ],
)
def test_data_statistics_and_names_are_withheld_when_they_could_leak(
    sql: str, stats: bool, names: bool
) -> None:
    result = classify_sql(sql, GuardPolicy())
    assert result.classification == "DATA"
    assert (result.stats_safe, result.names_safe) == (stats, names)


def test_comments_and_literals_do_not_change_the_verdict() -> None:
    base = classify_sql("SELECT MAX(ssn) FROM users", GuardPolicy())
    for variant in [
        "/* SELECT COUNT(*) FROM t */ SELECT MAX(ssn) FROM users",
        "SELECT MAX(ssn) -- information_schema.tables\nFROM users",
        "SELECT MAX(ssn) // METADATA\nFROM users",
        "SELECT MAX(ssn) FROM users WHERE 'COUNT(*)' <> 'x'",
    ]:
        other = classify_sql(variant, GuardPolicy())
        assert other.classification == base.classification == "DATA"
        assert other.objects == base.objects


def test_unanalysable_text_is_never_metadata_or_scalar() -> None:
    for sql in ["SELECT (", "SELECT 'unterminated", "§§§", "SELECT COUNT(*) FROM t WHERE"]:
        assert classify_sql(sql, GuardPolicy()).classification in ("DATA", "WRITE")


def test_too_long_text_is_not_parsed() -> None:
    policy = GuardPolicy(max_sql_length=50)
    result = classify_sql("SELECT COUNT(*) FROM orders WHERE status IS NULL AND id IS NULL", policy)
    assert result.classification == "DATA"
    assert "too_long" in result.reasons


def test_pathologically_deep_statements_are_not_trusted() -> None:
    sql = "SELECT COUNT(*) FROM t WHERE " + " AND ".join(["a IS NULL"] * 3000)
    result = classify_sql(sql, GuardPolicy())
    assert result.classification == "DATA"
    assert result.reasons[0] in ("too_complex", "parse_error")


def test_allowed_table_function_is_data_not_write() -> None:
    sql = "SELECT * FROM TABLE(parse_events(payload))"
    assert classify_sql(sql, GuardPolicy()).classification == "WRITE"
    allowed = classify_sql(sql, GuardPolicy(allowed_table_functions=frozenset({"parse_events"})))
    assert allowed.classification == "DATA"


def test_explain_objects_come_from_the_inner_statement() -> None:
    result = classify_sql("EXPLAIN SELECT * FROM prod.hr.salaries", GuardPolicy())
    assert result.classification == "METADATA"
    assert result.objects == ["PROD.HR.SALARIES"]
    excluded = classify_sql(
        "EXPLAIN SELECT * FROM prod.hr.salaries", GuardPolicy(exclusion_patterns=("PROD.*",))
    )
    assert excluded.excluded == ["PROD.HR.SALARIES"]


def test_explain_reasons_are_readable() -> None:
    result = classify_sql("SELECT MAX(ssn) FROM users", GuardPolicy())
    text = result.explain()
    assert text[0].startswith("value_aggregate:MAX - aggregate returns a value")


# --- decide(): what each tool may do -------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "tool", "allowed", "error"),
    [
        ("SHOW TABLES", "execute_sql", True, None),
        ("SELECT COUNT(*) FROM orders", "execute_sql", True, None),
        ("SELECT * FROM orders", "execute_sql", True, None),
        ("DROP TABLE orders", "execute_sql", False, "WRITE_REFUSED"),
        ("SELECT COUNT(*) FROM orders", "execute_scalar", True, None),
        ("SELECT MAX(id) FROM orders", "execute_scalar", False, "NOT_SCALAR"),
        ("CREATE TABLE x (a INT)", "execute_ddl", True, None),
        ("SELECT 1", "execute_ddl", False, "NOT_DDL"),
        ("CALL p()", "execute_ddl", False, "WRITE_REFUSED"),
        ("COPY INTO @s FROM (SELECT * FROM orders)", "execute_ddl", False, "WRITE_REFUSED"),
        ("SELECT 1; SELECT 2", "execute_sql", False, "MULTI_STATEMENT"),
        ("CREATE TABLE a (x INT); CREATE TABLE b (x INT)", "execute_ddl", False, "MULTI_STATEMENT"),
        ("DESCRIBE RESULT LAST_QUERY_ID()", "execute_sql", False, "SESSION_STATE_REFUSED"),
        ("SELECT COUNT(*) FROM TABLE(RESULT_SCAN('q'))", "execute_scalar", False, "SESSION_STATE_REFUSED"),
        ("SHOW VARIABLES", "execute_scalar", False, "SESSION_STATE_REFUSED"),
        ("CREATE TABLE k AS SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))", "execute_ddl", False,
         "SESSION_STATE_REFUSED"),
        ("CREATE TEMPORARY TABLE orders (a INT)", "execute_ddl", False, "SESSION_STATE_REFUSED"),
        ("SHOW TABLES; SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))", "execute_sql", False,
         "SESSION_STATE_REFUSED"),
    ],
)  # fmt: skip
def test_decide(sql: str, tool: Any, allowed: bool, error: str | None) -> None:
    decision = decide(classify_sql(sql, GuardPolicy()), tool)
    assert (decision.allowed, decision.error) == (allowed, error)


def test_session_state_is_refused_before_exclusions_in_every_tool() -> None:
    """A result of another statement is refused as such, even when the policy has exclusions (RESULT_SCAN's
    source is also unknown to the exclusion check): the code tells the agent what to change."""
    policy = GuardPolicy(exclusion_patterns=("PROD.*",))
    for sql in ["SELECT * FROM TABLE(RESULT_SCAN(LAST_QUERY_ID()))", "DESCRIBE RESULT LAST_QUERY_ID()"]:
        for tool in ("execute_sql", "execute_scalar", "execute_ddl"):
            decision = decide(classify_sql(sql, policy), tool)  # type: ignore[arg-type]
            assert decision.error == "SESSION_STATE_REFUSED", (sql, tool)


def test_decide_refuses_excluded_objects_everywhere() -> None:
    policy = GuardPolicy(exclusion_patterns=("PROD.*",))
    for tool in ("execute_sql", "execute_scalar", "execute_ddl"):
        decision = decide(classify_sql("DROP TABLE prod.hr.salaries", policy), tool)  # type: ignore[arg-type]
        assert decision.error == "EXCLUDED_OBJECT"


def test_decide_passes_redaction_flags_for_data() -> None:
    decision = decide(classify_sql("SELECT * FROM users WHERE ssn = '1'", GuardPolicy()), "execute_sql")
    assert decision.allowed and decision.redact
    assert decision.include_stats is False
