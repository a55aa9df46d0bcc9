"""Redaction never lets a value through; scrub_error removes values from error messages."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest

from ade_platform.lib.guard import GuardPolicy, redact_result, scalar_result, scrub_error

SECRETS: list[Any] = [
    "123-45-6789",
    "jane.doe@example.com",
    "Sekr3t Passw0rd",
    987654321,
    31415.9265,
    Decimal("271828.18"),
    dt.date(1987, 6, 5),
    dt.datetime(2001, 2, 3, 4, 5, 6),
    {"card": "4111111111111111", "cvv": 737},
    ["alpha-token", 424242],
    b"\x00binary-blob\xff",
    True,
]


def _columns(n: int) -> list[dict[str, str]]:
    return [{"name": f"C{i}", "type": "VARIANT"} for i in range(n)]


def _assert_no_secret(payload: dict[str, Any]) -> None:
    text = json.dumps(payload, default=str)
    for secret in SECRETS:
        for needle in (str(secret), json.dumps(secret, default=str).strip('"')):
            if needle not in ("True", "true"):
                assert needle not in text, needle
    assert "4111111111111111" not in text and "alpha-token" not in text and "binary-blob" not in text


@pytest.mark.parametrize("as_dicts", [True, False])
def test_redact_returns_no_value_of_any_type(as_dicts: bool) -> None:
    cols = _columns(len(SECRETS))
    rows: list[Any] = []
    for shift in range(3):
        row = [SECRETS[(i + shift) % len(SECRETS)] for i in range(len(SECRETS))]
        rows.append({c["name"]: v for c, v in zip(cols, row, strict=True)} if as_dicts else row)
    out = redact_result(cols, rows)
    _assert_no_secret(out)
    assert set(out) == {"columns", "row_count", "redacted"}
    assert out["redacted"] is True and out["row_count"] == 3
    assert all(set(c) == {"name", "type", "null_percentage"} for c in out["columns"])


def test_null_percentages_and_missing_keys() -> None:
    cols = [{"name": "A", "type": "NUMBER(38,0)"}, {"name": "B", "type": "VARCHAR(16777216)"}]
    rows = [{"A": 1, "B": None}, {"A": None, "B": "x"}, {"A": 3}, {"A": 4, "B": "y"}]
    out = redact_result(cols, rows)
    assert out["columns"] == [
        {"name": "A", "type": "NUMBER(38,0)", "null_percentage": 25.0},
        {"name": "B", "type": "VARCHAR(16777216)", "null_percentage": 50.0},
    ]
    assert out["row_count"] == 4


def test_withheld_stats_and_names() -> None:
    rows = [["x", None]]
    out = redact_result(
        [{"name": "ssn=123", "type": "TEXT"}, {"name": "B", "type": "TEXT"}],
        rows,
        include_stats=False,
        include_names=False,
    )
    assert out == {
        "columns": [
            {"name": "column_1", "type": "TEXT", "null_percentage": None},
            {"name": "column_2", "type": "TEXT", "null_percentage": None},
        ],
        "row_count": None,
        "redacted": True,
    }


def test_columns_inferred_from_rows_and_empty_results() -> None:
    out = redact_result([], [{"ID": 1, "EMAIL": "a@b.c"}, {"ID": 2, "NOTE": None}])
    assert [c["name"] for c in out["columns"]] == ["ID", "EMAIL", "NOTE"]
    assert {c["type"] for c in out["columns"]} == {"UNKNOWN"}
    assert "a@b.c" not in json.dumps(out)
    empty = redact_result([{"name": "A", "type": "NUMBER"}], [])
    assert empty["row_count"] == 0 and empty["columns"][0]["null_percentage"] is None
    assert redact_result([], [[1, 2, 3]])["columns"][2]["name"] == "column_3"


def test_type_strings_that_are_not_types_are_dropped() -> None:
    out = redact_result([{"name": "A", "type": "123-45-6789"}, {"name": "B", "type": "TIMESTAMP_NTZ(9)"}], [])
    assert [c["type"] for c in out["columns"]] == ["UNKNOWN", "TIMESTAMP_NTZ(9)"]


def test_scalar_result_rechecks_shape() -> None:
    policy = GuardPolicy()
    cols = [{"name": "N", "type": "NUMBER"}]
    assert scalar_result(cols, [{"N": 42}], policy) == {
        "columns": [{"name": "N", "type": "NUMBER"}],
        "rows": [{"N": 42}],
        "redacted": False,
    }
    assert scalar_result(cols, [{"N": "42"}], policy)["redacted"] is False
    leaked = scalar_result(cols, [{"N": "123-45-6789"}], policy)
    assert leaked["redacted"] is True and "123-45-6789" not in json.dumps(leaked)
    assert scalar_result(cols, [{"N": 1}, {"N": 2}], policy)["redacted"] is True
    assert scalar_result(cols, [{"N": 1}, {"N": 2}], GuardPolicy(max_scalar_rows=2))["redacted"] is False


# --- scrub_error ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "sql", "leaks", "keeps"),
    [
        (
            "100038 (22018): Numeric value '123-45-6789' is not recognized",
            "SELECT CAST(ssn AS INT) FROM users",
            ["123-45-6789"],
            ["100038 (22018)", "Numeric value"],
        ),
        (
            '100090 (42P18): Duplicate row detected during DML action\nRow Values: [48213, "Jane Doe", 99.5]',
            "MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE",
            ["48213", "Jane Doe", "99.5"],
            ["Duplicate row detected"],
        ),
        (
            "Date 'jane.doe@example.com' is not recognized",
            "SELECT TO_DATE(email) FROM users",
            ["jane.doe@example.com"],
            [],
        ),
        (
            "unexpected value Smith near token",
            "SELECT * FROM users WHERE last_name = 'Smith'",
            ["Smith"],
            ["unexpected value"],
        ),
        (
            "String 'AB12XYZ' is too long and would be truncated",
            "INSERT INTO t VALUES ('AB12XYZ')",
            ["AB12XYZ"],
            ["is too long"],
        ),
        (
            "Invalid argument $$secret body$$ for function",
            "SELECT 1",
            ["secret body"],
            ["Invalid argument"],
        ),
        (
            "contact ops via root@corp.internal, ticket 7734221",
            "SELECT 1",
            ["root@corp.internal", "7734221"],
            ["contact ops"],
        ),
        (
            "000904 (42000): SQL compilation error: error line 1 at position 7\ninvalid identifier 'SSN'",
            "select ssn from t where x = 'Smith'",
            [],
            ["000904 (42000)", "line 1", "position 7", "invalid identifier 'SSN'"],
        ),
        (
            "002003 (42S02): SQL compilation error:\nObject 'DB.S.USERS' does not exist or not authorized.",
            "select * from db.s.users",
            [],
            ["Object 'DB.S.USERS'", "002003 (42S02)"],
        ),
        (
            "Numeric value 'SSN' is not recognized",  # a value that happens to equal an identifier
            "select cast(ssn as int) from t",
            ["'SSN'"],
            ["Numeric value"],
        ),
        (
            "Numeric value 'abc' is not recognized",
            "SELECT (",  # unparseable SQL: still scrubbed
            ["abc"],
            [],
        ),
    ],
)
def test_scrub_error(message: str, sql: str, leaks: list[str], keeps: list[str]) -> None:
    scrubbed = scrub_error(message, sql)
    for value in leaks:
        assert value not in scrubbed, scrubbed
    for text in keeps:
        assert text in scrubbed, scrubbed


def test_scrub_error_bounds_length() -> None:
    assert len(scrub_error("x" * 50_000, "SELECT 1")) <= 1000
