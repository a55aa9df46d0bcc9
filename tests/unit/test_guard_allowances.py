"""The guardrail is as useful as it is safe: honest profiling queries are allowed, no adversarial case is.

Both corpora live with the benchmark that measures them (benchmarks/snowflake/): `honest.sql`, one
analyst statement per line (a trailing `-- DATA: why` marks the honest statements the policy keeps
redacted), and `adversarial.jsonl`, where `must: DATA` means "never METADATA or SCALAR" (an allowed
statement whose result could carry a row value is a leak) and `must: WRITE` means a side effect that
execute_sql must refuse.
"""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from ade_platform.lib.guard import GuardPolicy, classify_sql, decide
from ade_platform.lib.guard._tokens import count_statements
from tests.conftest import REPO_ROOT

CORPORA = REPO_ROOT / "benchmarks" / "snowflake"


def _honest() -> list[tuple[str, bool]]:
    """(statement, expected allowed) for every statement line of honest.sql."""
    out = []
    for line in (CORPORA / "honest.sql").read_text().splitlines():
        if not line.strip() or line.startswith("--"):
            continue
        sql, _, note = line.partition(" -- DATA:")
        out.append((sql if note else line, not note))
    return out


HONEST = _honest()
ADVERSARIAL: list[dict[str, Any]] = [
    json.loads(line) for line in (CORPORA / "adversarial.jsonl").read_text().splitlines() if line.strip()
]


def test_corpora_are_broad() -> None:
    assert len(HONEST) >= 100 and len({s for s, _ in HONEST}) == len(HONEST)
    allowed = sum(ok for _, ok in HONEST)
    assert allowed / len(HONEST) >= 0.95
    assert len(ADVERSARIAL) >= 100 and len({c["sql"] for c in ADVERSARIAL}) == len(ADVERSARIAL)
    assert sum(c["must"] == "WRITE" for c in ADVERSARIAL) >= 25 and all(c["why"] for c in ADVERSARIAL)


@pytest.mark.parametrize(("sql", "allowed"), HONEST, ids=[f"h{i:03d}" for i in range(len(HONEST))])
def test_honest_statement(sql: str, allowed: bool) -> None:
    result = classify_sql(sql, GuardPolicy())
    assert (result.classification in ("METADATA", "SCALAR")) == allowed, result.reasons


@pytest.mark.parametrize("case", ADVERSARIAL, ids=[f"a{i:03d}" for i in range(len(ADVERSARIAL))])
def test_adversarial_statement_is_never_allowed(case: dict[str, Any]) -> None:
    result = classify_sql(case["sql"], GuardPolicy())
    if case["must"] == "WRITE":
        assert result.classification == "WRITE", (case["why"], result.reasons)
        assert decide(result, "execute_sql").error in (
            "WRITE_REFUSED",
            "MULTI_STATEMENT",
            "SESSION_STATE_REFUSED",
        )
    else:
        assert result.classification in ("DATA", "WRITE"), (case["why"], result.reasons)
        assert not decide(result, "execute_scalar").allowed


def test_statistical_aggregates_follow_the_numeric_switch() -> None:
    sql = "SELECT STDDEV(salary), VARIANCE(salary), SKEW(salary), KURTOSIS(salary), AVG(salary) FROM t"
    assert classify_sql(sql, GuardPolicy()).classification == "DATA"
    assert classify_sql(sql, GuardPolicy(allow_numeric_aggregates=True)).classification == "SCALAR"
    # Summing a null flag is counting, whatever the switch says; summing a value is not.
    assert classify_sql("SELECT SUM(IFF(x IS NULL, 1, 0)) FROM t", GuardPolicy()).classification == "SCALAR"
    assert classify_sql("SELECT SUM(IFF(x IS NULL, y, 0)) FROM t", GuardPolicy()).classification == "DATA"


def test_filtered_counts_switch_lifts_only_the_predicate_rule() -> None:
    policy = GuardPolicy(allow_filtered_counts=True)
    assert classify_sql("SELECT COUNT(*) FROM t WHERE ssn = '1'", policy).classification == "SCALAR"
    for sql in ["SELECT COUNT(*) + MAX(ssn) FROM t", "SELECT COUNT(*) FROM (SELECT SIGN(x - 5) AS s FROM t)"]:
        assert classify_sql(sql, policy).classification == "DATA"


def test_explain_is_metadata_but_checks_the_objects_it_names() -> None:
    policy = GuardPolicy(exclusion_patterns=("*.HR.*",))
    result = classify_sql("EXPLAIN DELETE FROM prod.hr.salaries WHERE ssn = '1'", policy)
    assert result.classification == "METADATA" and result.excluded == ["PROD.HR.SALARIES"]
    assert classify_sql("EXPLAIN SELECT 1; DROP TABLE t", GuardPolicy()).classification == "WRITE"


def test_staged_file_metadata_checks_stage_and_format_exclusions() -> None:
    policy = GuardPolicy(exclusion_patterns=("PII_*",))
    sql = "SELECT * FROM TABLE(INFER_SCHEMA(LOCATION => '@raw.s.pii_landing/x/', FILE_FORMAT => 'raw.s.ff'))"
    assert classify_sql(sql, policy).excluded == ["@RAW.S.PII_LANDING"]
    assert classify_sql("SELECT * FROM DIRECTORY(@raw.s.pii_landing)", policy).excluded == [
        "@RAW.S.PII_LANDING"
    ]
    assert classify_sql("LIST @raw.s.pii_landing", policy).excluded == ["@RAW.S.PII_LANDING"]
    variable = classify_sql("SELECT * FROM TABLE(INFER_SCHEMA(LOCATION => $loc))", GuardPolicy())
    assert variable.classification == "WRITE"
    assert decide(variable, "execute_sql").error == "SESSION_STATE_REFUSED"


def test_get_ddl_folds_concatenated_literals_for_exclusions() -> None:
    policy = GuardPolicy(exclusion_patterns=("PROD.HR.*",))
    result = classify_sql("SELECT GET_DDL('TABLE', 'PROD.' || 'HR.SALARIES')", policy)
    assert result.classification == "METADATA" and result.excluded == ["PROD.HR.SALARIES"]


def test_metadata_batches_are_metadata_but_still_one_statement_per_call() -> None:
    result = classify_sql("SHOW TABLES; DESCRIBE TABLE orders;", GuardPolicy())
    assert result.classification == "METADATA" and "multi_statement" in result.reasons
    assert decide(result, "execute_sql").error == "MULTI_STATEMENT"
    excluded = classify_sql(
        "SHOW TABLES; SHOW STAGES", GuardPolicy(excluded_object_types=frozenset({"STAGE"}))
    )
    assert excluded.excluded == ["SHOW STAGE"]


@pytest.mark.parametrize(
    ("sql", "classification"),
    [
        # side effects are writes even inside reads
        ("SELECT seq1.NEXTVAL", "WRITE"),
        ("SELECT COUNT(*) FROM t WHERE id = seq1.nextval", "WRITE"),
        ("SELECT SYSTEM$ABORT_SESSION(1)", "WRITE"),
        ("SELECT COUNT(*) FROM t WHERE SYSTEM$CANCEL_QUERY('x') IS NULL", "WRITE"),
        ("CALL p()", "WRITE"),
        # semicolons in strings and comments separate nothing
        ("SELECT COUNT(*) FROM t WHERE note IS NULL AND 'a;b' = 'a;b'", "SCALAR"),
        ("SELECT COUNT(*) FROM t -- ; SELECT MAX(ssn) FROM t", "SCALAR"),
        ("SELECT COUNT(*) /* ; DROP TABLE t */ FROM t", "SCALAR"),
        ("SELECT COUNT(*) FROM t // ; DROP TABLE t\n", "SCALAR"),
        ("SELECT COUNT(*) FROM t WHERE $$;$$ = $$;$$", "SCALAR"),
        ("SELECT COUNT(*) FROM t WHERE 'it''s;' = 'it\\'s;'", "SCALAR"),
    ],
)
def test_what_a_statement_does_not_how_it_looks_classifies_it(sql: str, classification: str) -> None:
    result = classify_sql(sql, GuardPolicy())
    assert result.classification == classification, result.reasons
    refusal = "WRITE_REFUSED" if classification == "WRITE" else None  # a scalar runs through either tool
    assert decide(result, "execute_sql").error == refusal
    assert decide(result, "execute_scalar").error == refusal


SPLIT_CASES = [
    "SELECT 'a;b'",
    "SELECT 'it''s;x'; SELECT 2",
    "SELECT 'it\\'s;x'; SELECT 2",
    "SELECT $$a;b$$",
    "SELECT 1 -- ; SELECT 2",
    "SELECT 1 // ; SELECT 2\n; SELECT 3",
    "SELECT 1 /* ; */ ; SELECT 2",
    "SELECT 1 /* x /* y */ ; SELECT 2 */",
    'SELECT "a;b" FROM t',
    "SELECT 'a\\\\';SELECT 2",
    "SELECT '$$'; SELECT '$$'",
    ";;SELECT 1;;",
]


@pytest.mark.parametrize("sql", SPLIT_CASES)
def test_statement_count_matches_the_connector_splitter(sql: str) -> None:
    util_text = pytest.importorskip("snowflake.connector.util_text")
    theirs = [
        s for s, _ in util_text.split_statements(io.StringIO(sql), remove_comments=True) if s.strip(" ;")
    ]
    assert count_statements(sql) == len(theirs)


def test_classification_does_not_log_parser_warnings(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        for sql in ["SHOW MATERIALIZED VIEWS", "EXPLAIN SELECT 1", "CALL p()", "ALTER WAREHOUSE w SUSPEND"]:
            classify_sql(sql, GuardPolicy())
    assert not [r for r in caplog.records if r.name == "sqlglot"]


def test_corpus_files_hold_no_machine_paths() -> None:
    # This machine's own folders (the checkout itself, the home directory), whatever they are called, and the
    # usual shapes of a user's folder. Not the checkout's parent: a clone under /tmp would take every legitimate
    # `/tmp/` of a Snowflake statement (a stage path) for a machine path.
    machine = {str(REPO_ROOT.resolve()), str(Path.home())} - {"/"}
    # a user's folder: <root>/<name>/ under the usual roots of home folders, or the superuser's own
    homes, superuser = "|".join(("home", "Users")), "root"
    user_folder = re.compile(rf"(?<![\w.])/(?:{homes})/[A-Za-z][\w.-]*/|(?<![\w.])/{superuser}/")
    for path in (CORPORA / "honest.sql", CORPORA / "adversarial.jsonl"):
        text = Path(path).read_text()
        assert not [folder for folder in machine if folder + "/" in text]
        assert not user_folder.findall(text)
