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
