"""Exclusion checking: pattern semantics, and objects caught wherever a statement hides them."""

from __future__ import annotations

import pytest

from ade_platform.lib.guard import GuardPolicy, classify_sql, matches_exclusion
from ade_platform.lib.guard.policy import DEFAULT_EXCLUSION_REGEXES

PROD = GuardPolicy(exclusion_patterns=("PROD.*.SALARIES", "*PII*"))


@pytest.mark.parametrize(
    ("name", "patterns", "defaults", "expected"),
    [
        ("PROD.HR.SALARIES", ["PROD.*.SALARIES"], None, "PROD.*.SALARIES"),
        ("prod.hr.salaries", ["PROD.*.SALARIES"], None, "PROD.*.SALARIES"),
        ('"prod"."hr"."Salaries"', ["PROD.*.SALARIES"], None, "PROD.*.SALARIES"),
        ("DEV.HR.SALARIES", ["PROD.*.SALARIES"], None, None),
        ("SALARIES", ["PROD.*.SALARIES"], None, "PROD.*.SALARIES"),  # unqualified: may resolve into PROD
        ("HR.SALARIES", ["PROD.*.SALARIES"], None, "PROD.*.SALARIES"),
        ("SALARIES", ["PROD.*.SALARIES"], ("DEV", "PUBLIC"), None),
        ("SALARIES", ["PROD.*.SALARIES"], ("PROD", "HR"), "PROD.*.SALARIES"),
        ("ORDERS", ["PROD.*.SALARIES"], None, None),
        ("PROD.HR.ORDERS", ["*.HR.*"], None, "*.HR.*"),
        ("ORDERS", ["*.HR.*"], None, "*.HR.*"),  # unknown schema might be HR
        ("ORDERS", ["*.HR.*"], ("DEV", "PUBLIC"), None),
        ("DEV.PII_RAW.EVENTS", ["*PII*"], None, "*PII*"),
        ("DEV.PUBLIC.ORDERS", ["*PII*"], None, None),
        ("PROD_SALES.PUBLIC.X", ["PROD_*"], None, "PROD_*"),
        ("X.Y.ORDERS_BACKUP", ["*_BACKUP"], None, "*_BACKUP"),
        ("PROD.ANY.THING", ["PROD.*"], None, "PROD.*"),
        ("X.PROD.THING", ["PROD.*"], None, "PROD.*"),  # a schema named PROD matches too: err on excluding
        ("HR.SALARIES", ["HR.SALARIES"], ("DEV", None), "HR.SALARIES"),
        ("@PROD.S.LANDING/path/file.csv", ["PROD.*"], None, "PROD.*"),
        ("@~/x", ["*"], None, None),
        ("DB.S.T[1]", ["DB.S.T[1]"], None, "DB.S.T[1]"),  # brackets are literal, not a character class
    ],
)
def test_matches_exclusion(
    name: str, patterns: list[str], defaults: tuple[str, str | None] | None, expected: str | None
) -> None:
    db, schema = defaults or (None, None)
    policy = GuardPolicy(exclusion_patterns=tuple(patterns), default_database=db, default_schema=schema)
    assert matches_exclusion(name, policy) == expected


def test_containers_and_account_objects() -> None:
    assert matches_exclusion("PROD", PROD, kind="DATABASE") == "PROD.*.SALARIES"  # GET_DDL('DATABASE','PROD')
    assert matches_exclusion("DEV", PROD, kind="DATABASE") is None
    assert matches_exclusion("PII_READER", PROD, kind="ROLE") == "*PII*"
    assert matches_exclusion("ANALYST", GuardPolicy(exclusion_patterns=("PROD.*",)), kind="ROLE") is None


def test_invalid_patterns_are_rejected() -> None:
    with pytest.raises(ValueError):
        GuardPolicy(exclusion_patterns=("A.B.C.D",))
    with pytest.raises(ValueError):
        GuardPolicy(exclusion_patterns=("PROD..X",))


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM prod.hr.salaries",
        "WITH s AS (SELECT * FROM prod.hr.salaries) SELECT COUNT(*) FROM s",
        "SELECT * FROM orders WHERE id IN (SELECT id FROM prod.hr.salaries)",
        "SELECT (SELECT MAX(amount) FROM prod.hr.salaries) FROM orders",
        "SELECT * FROM (SELECT * FROM prod.hr.salaries) s",
        "SELECT * FROM orders o JOIN prod.hr.salaries s ON o.id = s.id",
        "SELECT * FROM orders o, LATERAL (SELECT * FROM prod.hr.salaries s WHERE s.id = o.id)",
        "SELECT id FROM orders UNION ALL SELECT id FROM prod.hr.salaries",
        "SELECT id FROM orders EXCEPT SELECT id FROM prod.hr.salaries",
        "SELECT * FROM TABLE(INFORMATION_SCHEMA.TAG_REFERENCES('prod.hr.salaries', 'table'))",
        "SELECT GET_DDL('TABLE', 'prod.hr.salaries')",
        "SELECT GET_DDL('DATABASE', 'prod')",
        "SELECT SYSTEM$CLUSTERING_INFORMATION('prod.hr.salaries')",
        "SELECT * FROM IDENTIFIER('prod.hr.salaries')",
        "DESCRIBE TABLE prod.hr.salaries",
        "SHOW COLUMNS IN TABLE prod.hr.salaries",
        "SHOW GRANTS ON TABLE prod.hr.salaries",
        "EXPLAIN SELECT * FROM prod.hr.salaries",
        "INSERT INTO dev.public.copy SELECT * FROM prod.hr.salaries",
        "CREATE TABLE dev.public.copy AS SELECT * FROM prod.hr.salaries",
        "CREATE DATABASE dev_clone CLONE prod",
        "COPY INTO @dev_stage FROM (SELECT * FROM prod.hr.salaries)",
        "DELETE FROM dev.public.x USING prod.hr.salaries s WHERE x.id = s.id",
        "SELECT * FROM salaries",  # unqualified, no defaults: may be PROD.<schema>.SALARIES
        'SELECT * FROM "PROD"."HR"."salaries"',
        "SELECT * FROM dev.pii.customers",
        "SELECT $1 FROM @dev.public.pii_landing",
        "SELECT * FROM @%pii_table",
        "SELECT dev.public.pii_decrypt(x) FROM orders",
        "SELECT * FROM TABLE(dev.public.pii_udtf(1))",
        "CALL dev.pii.refresh()",
        "GET @pii_stage/x file:///tmp/",
        "SELECT FROM prod.hr.salaries WHERE",  # unparseable: objects from tokens
        "SELECT 1; SELECT * FROM prod.hr.salaries",
        "WITH a AS (SELECT * FROM salaries), salaries AS (SELECT 1 AS x) SELECT * FROM a",
        "WITH salaries AS (SELECT * FROM salaries) SELECT * FROM salaries",
    ],
)
def test_excluded_object_is_caught_wherever_it_hides(sql: str) -> None:
    result = classify_sql(sql, PROD)
    assert result.excluded, (result.reasons, result.objects)


@pytest.mark.parametrize(
    "sql",
    [
        "WITH salaries AS (SELECT 1 AS x) SELECT * FROM salaries",  # a CTE, not the table
        "SELECT * FROM dev.hr.salaries",
        "SELECT COUNT(*) FROM orders",
        "SHOW TABLES",
        "SELECT table_name FROM information_schema.tables WHERE table_name = 'SALARIES'",
    ],
)
def test_unrelated_objects_are_not_excluded(sql: str) -> None:
    assert classify_sql(sql, PROD).excluded == []


def test_defaults_resolve_unqualified_names() -> None:
    pinned = GuardPolicy(
        exclusion_patterns=("PROD.*.SALARIES",), default_database="DEV", default_schema="PUBLIC"
    )
    assert classify_sql("SELECT * FROM salaries", pinned).excluded == []
    assert classify_sql("SELECT * FROM prod.hr.salaries", pinned).excluded == ["PROD.HR.SALARIES"]


def test_an_unqualified_name_is_also_checked_where_the_search_path_finds_it() -> None:
    """Snowflake resolves an unqualified name in a query through SEARCH_PATH, `$current, $public` by default:
    `salaries` missing from the pinned schema is PUBLIC.SALARIES, so an exclusion of that must hold."""
    policy = GuardPolicy(
        exclusion_patterns=("*.PUBLIC.SALARIES",), default_database="DB", default_schema="APP"
    )
    for sql in ["SELECT COUNT(*) FROM salaries", "SELECT * FROM orders JOIN salaries USING (id)"]:
        assert classify_sql(sql, policy).excluded == ["SALARIES"], sql
    # Qualified names and DDL targets do not go through the search path.
    assert classify_sql("SELECT COUNT(*) FROM app.salaries", policy).excluded == []
    assert classify_sql("SELECT COUNT(*) FROM db.app.salaries", policy).excluded == []
    assert classify_sql("DESCRIBE TABLE salaries", policy).excluded == []
    # The catalog places the name in the current schema: that is where it resolves.
    catalog = {"DB.APP.SALARIES": "TABLE"}
    assert classify_sql("SELECT COUNT(*) FROM salaries", policy, object_types=catalog).excluded == []


def test_runtime_only_objects_fail_closed() -> None:
    for sql in [
        "SELECT * FROM IDENTIFIER($t)",
        "SELECT GET_DDL('TABLE', $t)",
        "SELECT * FROM TABLE(RESULT_SCAN('x'))",
    ]:
        assert classify_sql(sql, PROD).excluded, sql
        assert classify_sql(sql, GuardPolicy()).excluded == [], sql  # nothing to protect, nothing excluded


def test_excluded_object_types() -> None:
    policy = GuardPolicy(excluded_object_types=frozenset({"stage", "materialized view"}))
    for sql in [
        "DESCRIBE STAGE @landing",
        "SELECT $1 FROM @landing",
        "SHOW STAGES",
        "SHOW MATERIALIZED VIEWS",
    ]:
        assert classify_sql(sql, policy).excluded, sql
    assert classify_sql("SELECT * FROM orders", policy).excluded  # kind of ORDERS unknown: fail closed
    known = {"ORDERS": "TABLE", "MV_ORDERS": "MATERIALIZED VIEW"}
    assert classify_sql("SELECT * FROM orders", policy, object_types=known).excluded == []
    assert classify_sql("SELECT * FROM mv_orders", policy, object_types=known).excluded == ["MV_ORDERS"]
    assert classify_sql("SELECT * FROM information_schema.tables", policy).excluded == []


def test_dependencies_extend_the_check_through_views() -> None:
    policy = GuardPolicy(
        exclusion_patterns=("PROD.*.SALARIES",), default_database="DEV", default_schema="PUBLIC"
    )
    deps = {"DEV.PUBLIC.V_PAY": ["DEV.PUBLIC.V_BASE"], "DEV.PUBLIC.V_BASE": ["PROD.HR.SALARIES"]}
    result = classify_sql("SELECT COUNT(*) FROM v_pay", policy, dependencies=deps)
    assert result.excluded == ["V_PAY"]
    assert any(r.startswith("excluded_dependency:V_PAY->PROD.HR.SALARIES") for r in result.reasons)
    assert classify_sql("SELECT COUNT(*) FROM v_other", policy, dependencies=deps).excluded == []


SPEC_DEFAULTS = GuardPolicy(
    exclusion_regexes=DEFAULT_EXCLUSION_REGEXES, default_database="DEV", default_schema="PUBLIC"
)


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("PROD_SALES.PUBLIC.ORDERS", None, "^PROD_"),  # the database
        ("DEV.prod_hr.SALARIES", None, "^PROD_"),  # a schema, case-insensitive
        ("ORDERS_PROD", None, "_PROD$"),  # unqualified: pinned to DEV.PUBLIC
        ("DEV.PUBLIC.CUSTOMERS_BACKUP", None, "_BACKUP$"),
        ("DEV.PUBLIC.EVENTS_ARCHIVE", None, "_ARCHIVE$"),
        ("SYSTEM_AUDIT", "ROLE", "^SYSTEM_"),  # account-level objects are names too
        ("PROD_ANALYTICS", "DATABASE", "^PROD_"),
        ("DEV.PUBLIC.PRODUCTS", None, None),  # PROD without the underscore
        ("DEV.PUBLIC.BACKUP_JOBS", None, None),  # not a suffix
        ("DEV.PUBLIC.ORDERS_PROD_V2", None, None),  # anchored: not at the end
        ("SYSTEM$WHITELIST", "FUNCTION", None),
    ],
)
def test_spec_default_regexes(name: str, kind: str | None, expected: str | None) -> None:
    assert matches_exclusion(name, SPEC_DEFAULTS, kind=kind) == expected


def test_any_python_regex_and_its_errors() -> None:
    policy = GuardPolicy(exclusion_regexes=(r"^(HR|FIN)_\d{2}$", r"\.SECRETS\.", "(?-i:^lower$)"))
    assert matches_exclusion("DB.S.hr_12", policy) == r"^(HR|FIN)_\d{2}$"
    assert matches_exclusion("DB.S.HR_123", policy) is None
    # The dotted name is searched too when every part is known.
    assert matches_exclusion("DB.SECRETS.T", policy) == r"\.SECRETS\."
    assert matches_exclusion("T", policy) is None  # parts unknown: a regex is not assumed to match
    # Parts are compared upper-cased, as Snowflake folds unquoted names.
    assert matches_exclusion("DB.S.lower", policy) is None
    with pytest.raises(ValueError, match="not a valid regular expression"):
        GuardPolicy(exclusion_regexes=("^(PROD",))
    with pytest.raises(ValueError, match="matches every name"):
        GuardPolicy(exclusion_regexes=("PROD|",))


def test_default_regexes_fail_closed_on_statements() -> None:
    assert classify_sql("SELECT COUNT(*) FROM prod_sales.public.orders", SPEC_DEFAULTS).excluded
    assert classify_sql("SELECT * FROM t JOIN x.y.t_archive USING (id)", SPEC_DEFAULTS).excluded == [
        "X.Y.T_ARCHIVE"
    ]
    assert classify_sql("SELECT COUNT(*) FROM orders", SPEC_DEFAULTS).excluded == []
