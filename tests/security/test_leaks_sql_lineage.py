"""The decision `bi_run_look` and `warehouse_execute` share (`ade_platform/lib/sql_protect.py`), over generated
SQL of the shape Looker writes: every spelling of a personal column x every path it can take to an output
column, and every way an excluded table can be read, each on the parse of the SQL that runs. Through MCP the same
code is driven by tests/security/test_leaks_bi.py and test_leaks_warehouse.py."""

from __future__ import annotations

import itertools

import pytest
import sqlglot

from ade_platform.lib.bi.look_rows import LookRules, sql_protected
from ade_platform.lib.guard.policy import GuardPolicy

RULES = LookRules(
    GuardPolicy(exclusion_patterns=("*.HR.*",), default_database="demo", default_schema="main"),
    dialect="duckdb",
    default_schema="main",
)
# How a personal column may be spelled in the warehouse (quoted, spaced, cased, dashed).
SPELLINGS = ['"Email Address"', "e_mail", '"EMAIL "', "EMail", '"e-mail"', "email_addr", '"Full Name"', "SSN"]
# Paths from the column (`{c}`, in main.people) to the output column "v.out".
PATHS = [
    'SELECT p.{c} AS "v.out" FROM main.people AS p',
    'SELECT UPPER(p.{c}) AS "v.out" FROM main.people AS p',
    'SELECT x.k AS "v.out" FROM (SELECT {c} AS k FROM main.people) AS x',
    'WITH a AS (SELECT {c} AS k FROM main.people), b AS (SELECT k AS j FROM a) SELECT b.j AS "v.out" FROM b',
    'SELECT (SELECT MAX(q.{c}) FROM main.people AS q WHERE q.id = o.id) AS "v.out" FROM main.orders AS o',
    'SELECT pv.k AS "v.out" FROM main.orders AS o LEFT JOIN (SELECT id, {c} AS k FROM main.people) AS pv '
    "ON o.id = pv.id",
    'SELECT CASE WHEN o.id > 0 THEN p.{c} END AS "v.out" FROM main.orders AS o JOIN main.people AS p ON o.id = p.id',
    "SELECT COALESCE(p.{c}, '-') || '!' AS \"v.out\" FROM main.people AS p",
    'WITH base AS (SELECT * FROM main.people) SELECT {c} AS "v.out" FROM base',
]
EXCLUDED = ["hr.salaries", "HR.SALARIES", '"hr"."salaries"', "demo.hr.salaries", '"DEMO"."HR"."SALARIES"']
EXCLUDED_PATHS = [
    'SELECT s.amount AS "v.out" FROM {t} AS s',
    'SELECT (SELECT MAX(amount) FROM {t}) AS "v.out"',
    'SELECT o.id AS "v.out" FROM main.orders AS o WHERE o.id IN (SELECT id FROM {t})',
    'WITH s AS (SELECT * FROM {t}) SELECT COUNT(*) AS "v.out" FROM s',
    'SELECT o.id AS "v.out" FROM main.orders AS o LEFT JOIN {t} AS s ON s.id = o.id',
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_personal_column_is_masked_on_every_path(spelling: str) -> None:
    missed = []
    for path in PATHS:
        sql = path.format(c=spelling)
        sqlglot.parse_one(sql, read="duckdb")  # the variant itself is valid SQL
        reasons = sql_protected(sql, ["v.out"], RULES)
        if not reasons.get("v.out", "").startswith("pii:"):
            missed.append((sql, reasons))
    assert not missed, missed


def test_an_excluded_table_masks_every_column_wherever_it_is_read() -> None:
    variants = [p.format(t=t) for p, t in itertools.product(EXCLUDED_PATHS, EXCLUDED)]
    missed = [(sql, r) for sql in variants if not (r := sql_protected(sql, ["v.out"], RULES)).get("v.out")]
    assert not missed, missed
    assert len(variants) == 25


def test_harmless_columns_pass_and_unparsable_sql_masks_all() -> None:
    harmless = [
        'SELECT o.id AS "v.out" FROM main.orders AS o',
        'SELECT SUM(o.amount) AS "v.out" FROM main.orders AS o LEFT JOIN main.people AS p ON p.id = o.id',
        'WITH a AS (SELECT id FROM main.people) SELECT COUNT(*) AS "v.out" FROM a',
    ]
    assert [sql_protected(sql, ["v.out"], RULES) for sql in harmless] == [{}, {}, {}]
    assert sql_protected("SELECT FROM WHERE (", ["a", "b"], RULES) == {
        "a": "unparsed_sql",
        "b": "unparsed_sql",
    }
    assert sql_protected("SELECT 1; SELECT 2", ["a"], RULES) == {"a": "unparsed_sql"}
