"""Audit records keep a statement's shape and drop its values (ade_platform/lib/redact.py)."""

from __future__ import annotations

import pytest

from ade_platform.lib.redact import redact_arguments, strip_sql_literals


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        (
            "SELECT count(*) AS n FROM shop.orders WHERE email = 'a@b.c' and amount > 10.5 and id in (1,2,3)",
            "SELECT count(*) AS n FROM shop.orders WHERE email = ? and amount > ? and id in (?,?,?)",
        ),
        ("select N'abc', 'it''s', 1e5, -3 from t1", "select ?, ?, ?, -? from t1"),
        ("SELECT * FROM t WHERE d = DATE '2024-01-01'", "SELECT * FROM t WHERE d = DATE ?"),
        ("select 1; select 'two'", "select ?; select ?"),
        ("select a from t where b = $$secret$$", "select a from t where b = ?"),
    ],
)
def test_literals_become_placeholders_and_the_rest_stays_as_written(sql: str, expected: str) -> None:
    assert strip_sql_literals(sql) == expected


def test_comments_are_dropped_they_can_carry_values() -> None:
    sql = "select a -- ssn 123-45-6789\nfrom t /* card 4111 */ where b = 2"
    assert strip_sql_literals(sql) == "select a from t where b = ?"


@pytest.mark.parametrize("sql", ["select 'unterminated secret", "select 'a' || 'b", "\x00 'x' 42"])
def test_what_cannot_be_tokenized_still_loses_its_values(sql: str) -> None:
    redacted = strip_sql_literals(sql)
    assert "secret" not in redacted and "42" not in redacted and "'a'" not in redacted


def test_arguments_redact_secrets_and_sql_and_recurse() -> None:
    redacted = redact_arguments(
        {"sql": "select * from t where k = 'v'", "api_token": "tok", "nested": {"password": "pw", "n": 1}}
    )
    assert redacted == {
        "sql": "select * from t where k = ?",
        "api_token": "***",
        "nested": {"password": "***", "n": 1},
    }


@pytest.mark.parametrize(
    ("sql", "dialect", "expected"),
    [
        ('SELECT * FROM t WHERE ssn = "123-45-6789"', "bigquery", "SELECT * FROM t WHERE ssn = ?"),
        ("SELECT * FROM t WHERE n = 'it\\'s a secret'", "bigquery", "SELECT * FROM t WHERE n = ?"),
        ('SELECT r"raw secret", """tri secret""" FROM t', "bigquery", "SELECT ?, ? FROM t"),
        ("SELECT * FROM t WHERE n = 'a\\'b secret'", "snowflake", "SELECT * FROM t WHERE n = ?"),
        ("SELECT $$dollar secret$$ FROM t", "snowflake", "SELECT ? FROM t"),
        ('SELECT "Secret Col" FROM t WHERE a = 1', "snowflake", 'SELECT "Secret Col" FROM t WHERE a = ?'),
        ("SELECT e'x\\'y secret', $$q secret$$", "duckdb", "SELECT ?, ?"),
    ],
)
def test_literals_are_stripped_by_the_warehouses_own_quoting_rules(
    sql: str, dialect: str, expected: str
) -> None:
    assert strip_sql_literals(sql, dialect) == expected


@pytest.mark.parametrize(
    ("sql", "dialects"),
    [
        ("select 'x', 'unterminated secret", [None, "snowflake", "bigquery", "duckdb"]),
        ("select $$dollar secret", [None, "snowflake", "duckdb"]),
        ("select a from t where b = $$x y secret$$ and c = 1", [None, "snowflake", "duckdb"]),
        ('select "unterminated secret', ["bigquery"]),
    ],
)
def test_unterminated_strings_lose_their_values(sql: str, dialects: list[str | None]) -> None:
    for dialect in dialects:
        assert "secret" not in strip_sql_literals(sql, dialect), dialect


def test_the_lexical_fallback_strips_every_quoting_form() -> None:
    from ade_platform.lib.redact import _lexical

    sql = "select 'a\\'b secret' , \"c\\\"d secret\" , $$e secret$$, 'x' || 'y"
    assert "secret" not in _lexical(sql, "bigquery")
    assert "secret" not in _lexical(sql.replace('"c\\"d secret" ,', ""), "snowflake")


def test_every_value_at_any_depth_is_redacted() -> None:
    from ade_platform.lib.secrets import SecretScrubber

    scrub = SecretScrubber(["hunter2-configured"])
    deep: object = "hunter2-configured"
    for _ in range(60):
        deep = [deep]
    redacted = redact_arguments(
        {
            "steps_override": ["dbt run --vars '{db_password: pw1}'", "dbt test --password pw2"],
            "conf": {
                "reason": "retry with hunter2-configured",
                "nested": [{"tokens": "pw3"}, ["pw4 hunter2-configured"]],
            },
            "cause": "see postgres://etl:pw5@db/x",
            "deep": deep,
            "sql": "select 'pw6'",
            "hunter2-configured": 1,
        },
        scrub=scrub,
    )
    text = str(redacted)
    for leaked in ("pw1", "pw2", "pw3", "hunter2-configured", "pw5", "pw6"):
        assert leaked not in text, leaked
    assert redacted["conf"]["reason"] == "retry with ***" and redacted["sql"] == "select ?"
    assert redacted["steps_override"][1] == "dbt test --password ***"
