"""execute_ddl's allow-list of kinds and its body checks (lib/guard/_ddl.py, _bodies.py), on the classifier alone.

The attacker's suite (tests/security/test_ddl_bodies.py) sends generated variants through MCP; these cases pin the
decision for each kind and body form, and what a scripting block is cut into.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ade_platform.lib.guard import GuardPolicy, classify_sql, decide
from ade_platform.lib.guard._bodies import split_script

POLICY = GuardPolicy(exclusion_regexes=("^PROD_", "_BACKUP$"), default_database="DB", default_schema="APP")
RUNS = GuardPolicy(allow_task_execution=True)

CHECKED_PROCEDURE = """CREATE OR REPLACE PROCEDURE p(n NUMBER) RETURNS TABLE (id NUMBER) LANGUAGE SQL
EXECUTE AS CALLER AS $$
DECLARE
  total NUMBER DEFAULT 0;
  c1 CURSOR FOR SELECT id FROM orders;
  res RESULTSET;
BEGIN
  FOR rec IN c1 DO total := total + 1; END FOR;
  FOR i IN 1 TO :n DO INSERT INTO audit_log (id) VALUES (:i); END FOR;
  IF (total > 10) THEN UPDATE orders SET note = 'big' WHERE id = 1;
  ELSEIF (total > 5) THEN DELETE FROM audit_log;
  ELSE LET x := 3;
  END IF;
  res := (SELECT id FROM orders);
  RETURN TABLE(res);
EXCEPTION
  WHEN OTHER THEN RETURN TABLE(res);
END;
$$"""


@pytest.mark.parametrize(
    "ddl",
    [
        "CREATE TABLE t (id NUMBER, url VARCHAR, policy VARCHAR, accounts INT)",
        "CREATE OR REPLACE TRANSIENT TABLE t (id NUMBER)",
        "ALTER TABLE t ADD COLUMN policy VARCHAR",
        "ALTER TABLE t SET TAG pii = 'email'",
        "DROP TABLE IF EXISTS t",
        "UNDROP TABLE t",
        "CREATE SCHEMA s",
        "CREATE DATABASE scratch",
        "CREATE SEQUENCE seq",
        "CREATE FILE FORMAT ff TYPE = CSV",
        "CREATE TAG tg",
        "CREATE STAGE s",
        "CREATE STREAM st ON TABLE t",
        "COMMENT ON COLUMN t.id IS 'key'",
        "CREATE FUNCTION f(x NUMBER) RETURNS NUMBER LANGUAGE SQL AS 'x * 2'",
        "CREATE FUNCTION f(x NUMBER) RETURNS NUMBER AS $$ x + 1 $$",
        "CREATE TASK t WAREHOUSE = w SCHEDULE = '5 MINUTE' AS INSERT INTO audit_log (id) VALUES (1)",
        "CREATE TASK t WHEN SYSTEM$STREAM_HAS_DATA('st') AS DELETE FROM audit_log",
        "ALTER TASK t SUSPEND",
        "ALTER TASK t SET SCHEDULE = '10 MINUTE'",
        "CREATE OR REPLACE PROCEDURE p() RETURNS VARCHAR AS 'BEGIN INSERT INTO audit_log (id) VALUES (1); "
        "RETURN ''done''; END'",
    ],
)
def test_allowed_kinds_pass(ddl: str) -> None:
    c = classify_sql(ddl, POLICY)
    assert decide(c, "execute_ddl").allowed, c.reasons


def test_a_checked_procedure_with_queries_is_only_ddl_with_queries() -> None:
    """A body that reads is an embedded query, like CREATE VIEW ... AS SELECT: the same switch governs it."""
    c = classify_sql(CHECKED_PROCEDURE, POLICY)
    assert decide(c, "execute_ddl").allowed and "write_embeds_query" in c.reasons, c.reasons


@pytest.mark.parametrize(
    ("ddl", "code", "reason"),
    [
        ("CREATE STAGE s URL = 's3://x/'", "DDL_KIND_REFUSED", "ddl_refused:EXTERNAL_LOCATION:URL"),
        ("ALTER STAGE s SET STORAGE_INTEGRATION = i", "DDL_KIND_REFUSED", "ddl_refused:INTEGRATION"),
        ("CREATE STORAGE INTEGRATION i TYPE = EXTERNAL_STAGE", "DDL_KIND_REFUSED", "ddl_refused:STORAGE_INTEGRATION"),
        ("CREATE USER u", "DDL_KIND_REFUSED", "ddl_refused:USER"),
        ("CREATE DATABASE ROLE db.r", "DDL_KIND_REFUSED", "ddl_refused:DATABASE_ROLE"),
        ("GRANT ROLE accountadmin TO USER u", "DDL_KIND_REFUSED", "ddl_refused:GRANT"),
        ("REVOKE SELECT ON TABLE t FROM ROLE r", "DDL_KIND_REFUSED", "ddl_refused:REVOKE"),
        ("CREATE SHARE s", "DDL_KIND_REFUSED", "ddl_refused:SHARE"),
        ("CREATE NETWORK POLICY np ALLOWED_IP_LIST = ('0.0.0.0/0')", "DDL_KIND_REFUSED", "ddl_refused:NETWORK_POLICY"),
        ("ALTER TABLE t MODIFY COLUMN c UNSET MASKING POLICY", "DDL_KIND_REFUSED", "ddl_refused:POLICY_CHANGE"),
        ("ALTER TABLE t DROP ROW ACCESS POLICY rap", "DDL_KIND_REFUSED", "ddl_refused:POLICY_CHANGE"),
        ("ALTER TABLE t MODIFY COLUMN c UNSET TAG pii", "DDL_KIND_REFUSED", "ddl_refused:TAG_UNSET"),
        ("DROP MASKING POLICY m", "DDL_KIND_REFUSED", "ddl_refused:MASKING_POLICY"),
        ("DROP TAG pii", "DDL_KIND_REFUSED", "ddl_refused:TAG_DROP"),
        ("CREATE EXTERNAL FUNCTION f() RETURNS INT API_INTEGRATION = a AS 'https://x'", "DDL_KIND_REFUSED",
         "ddl_refused:EXTERNAL_FUNCTION"),
        ("CREATE WAREHOUSE w", "DDL_KIND_REFUSED", "ddl_refused:WAREHOUSE"),
        ("CREATE GADGET g", "DDL_KIND_REFUSED", "ddl_refused:GADGET"),  # unknown kinds fail closed
        ("ALTER DATABASE scratch ENABLE REPLICATION TO ACCOUNTS org.a", "DDL_KIND_REFUSED", "ddl_refused:REPLICATION"),
        ("ALTER TASK t RESUME", "DDL_KIND_REFUSED", "ddl_refused:TASK_RESUME"),
        ("EXECUTE TASK t", "DDL_KIND_REFUSED", "ddl_refused:EXECUTE_TASK"),
        ("CREATE TASK t AS COPY INTO 's3://x' FROM orders", "DDL_BODY_REFUSED", "body_refused:data_egress"),
        ("CREATE TASK t AS CALL p()", "DDL_BODY_REFUSED", "body_refused:opaque_code:CALL"),
        ("CREATE TASK t2 CLONE t", "DDL_BODY_REFUSED", "body_refused:unchecked_clone"),
        ("ALTER TASK t MODIFY AS COPY INTO @s FROM orders", "DDL_BODY_REFUSED", "body_refused:data_egress"),
        ("CREATE ALERT a IF (EXISTS (SELECT 1)) THEN CALL p()", "DDL_BODY_REFUSED", "body_refused:opaque_code:CALL"),
        ("ALTER ALERT a MODIFY ACTION EXECUTE TASK t", "DDL_BODY_REFUSED", "body_refused:"),
        ("CREATE FUNCTION f() RETURNS INT LANGUAGE PYTHON HANDLER = 'h' AS 'x'", "DDL_BODY_REFUSED",
         "body_refused:language:PYTHON"),
        ("CREATE PROCEDURE p() RETURNS INT LANGUAGE JAVASCRIPT AS 'return 1'", "DDL_BODY_REFUSED",
         "body_refused:language:JAVASCRIPT"),
        ("CREATE FUNCTION f() RETURNS INT AS 'COPY INTO ''s3://x'' FROM orders'", "DDL_BODY_REFUSED",
         "body_refused:data_egress"),
        ("CREATE FUNCTION f() RETURNS INT AS 'SELECT SYSTEM$SEND_EMAIL(''i'', ''a'', ''s'', ''b'')'",
         "DDL_BODY_REFUSED", "body_refused:side_effect_function"),
        ("CREATE PROCEDURE p() RETURNS VARCHAR AS $$ BEGIN LET q := 'SELECT * FROM ' || 't'; "
         "LET rs RESULTSET := (EXECUTE IMMEDIATE :q); RETURN 'x'; END $$", "DDL_BODY_REFUSED",
         "body_refused:opaque_code:EXECUTE_IMMEDIATE"),
        ("CREATE PROCEDURE p() RETURNS VARCHAR AS $$ BEGIN USE SCHEMA s; RETURN 'x'; END $$", "DDL_BODY_REFUSED",
         "body_refused:session_state:USE"),
        ("CREATE PROCEDURE p() RETURNS VARCHAR AS 'BEGIN CREATE PROCEDURE q() RETURNS VARCHAR AS "
         "''BEGIN COPY INTO @s FROM orders; END''; END'", "DDL_BODY_REFUSED", "body_refused:data_egress"),
        ("CREATE PROCEDURE p() RETURNS VARCHAR AS $$ BEGIN SELECT * FROM prod_hr.salaries; END $$",
         "EXCLUDED_OBJECT", "excluded:PROD_HR.SALARIES"),
        ("CREATE ALERT a IF (EXISTS (SELECT * FROM db.prod_hr.salaries)) THEN DELETE FROM audit_log",
         "EXCLUDED_OBJECT", "excluded:DB.PROD_HR.SALARIES"),
        ("CREATE FUNCTION f() RETURNS VARCHAR AS $$ SELECT LAST_QUERY_ID() $$", "SESSION_STATE_REFUSED",
         "session_reach:LAST_QUERY_ID"),
        # Text another splitter may read differently (Snowflake's comments do not nest): no write on a guess.
        ("CREATE /* /* */ STAGE s -- */ TABLE t (a INT)", "WRITE_REFUSED", "ambiguous_comment"),
    ],
)  # fmt: skip
def test_refused(ddl: str, code: str, reason: str) -> None:
    c = classify_sql(ddl, POLICY)
    d = decide(c, "execute_ddl")
    assert d.error == code, (d, c.reasons)
    assert any(r.startswith(reason) for r in c.reasons), c.reasons


def test_task_execution_is_allowed_only_by_the_policy() -> None:
    for ddl in ("ALTER TASK t RESUME", "EXECUTE TASK t", "ALTER ALERT a RESUME", "EXECUTE ALERT a"):
        assert decide(classify_sql(ddl, GuardPolicy()), "execute_ddl").error == "DDL_KIND_REFUSED", ddl
        c = classify_sql(ddl, RUNS)
        assert decide(c, "execute_ddl").allowed and any(r.startswith("task_run:") for r in c.reasons), (
            c.reasons
        )
    # Allowing task runs does not open EXECUTE IMMEDIATE, nor bodies that run tasks.
    assert (
        decide(classify_sql("EXECUTE IMMEDIATE 'DROP TABLE t'", RUNS), "execute_ddl").error == "WRITE_REFUSED"
    )


def test_a_scripting_block_is_cut_into_what_runs() -> None:
    script = split_script(CHECKED_PROCEDURE.split("$$")[1])
    texts = [(p.role, " ".join(p.text.split())) for p in script.pieces]
    assert not script.refused
    assert ("query", "SELECT id FROM orders") in texts  # the cursor
    assert ("expression", "total + 1") in texts and ("expression", ":n") in texts  # assignment, FOR bound
    assert ("statement", "INSERT INTO audit_log (id) VALUES (:i)") in texts
    assert ("expression", "(total > 10)") in texts and ("expression", "(total > 5)") in texts
    assert ("statement", "UPDATE orders SET note = 'big' WHERE id = 1") in texts
    assert ("statement", "DELETE FROM audit_log") in texts
    assert ("expression", "(SELECT id FROM orders)") in texts  # res := (...)
    assert not [t for _, t in texts if t.upper().startswith(("BEGIN", "END", "RETURN", "FOR", "IF"))], texts


_PAYLOADS = [
    "COPY INTO 's3://x/' FROM orders",
    "COPY INTO @leak FROM orders",
    "CALL p()",
    "EXECUTE IMMEDIATE 'SELECT ' || 'x'",
    "EXECUTE TASK t",
]


@settings(max_examples=150, deadline=None)
@given(
    payload=st.sampled_from(_PAYLOADS),
    upper=st.lists(st.booleans(), min_size=64, max_size=64),
    gap=st.sampled_from([" ", "\n", "\t", " /* c */ ", " -- c\n", "  \n  "]),
    form=st.sampled_from(["plain", "dollar", "single"]),
)
def test_spelling_does_not_open_a_body(payload: str, upper: list[bool], gap: str, form: str) -> None:
    """Case, whitespace and comments anywhere between words: the body is still refused."""
    words = payload.split(" ")
    spelled = gap.join(w.upper() if upper[i % 64] else w.lower() for i, w in enumerate(words))
    if form == "plain":
        ddl = f"CREATE TASK t{gap}AS{gap}{spelled}"
    elif form == "dollar":
        ddl = f"CREATE PROCEDURE p() RETURNS VARCHAR AS $$ BEGIN{gap}{spelled}; RETURN 'x'; END $$"
    else:
        body = f"BEGIN{gap}{spelled}; RETURN 'x'; END".replace("'", "''")
        ddl = f"CREATE PROCEDURE p() RETURNS VARCHAR AS '{body}'"
    c = classify_sql(ddl, POLICY)
    assert decide(c, "execute_ddl").error == "DDL_BODY_REFUSED", (ddl, c.reasons)
