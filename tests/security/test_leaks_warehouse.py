"""`warehouse_execute` applies the Snowflake proxy's exclusions and the PII rules (issue 34), on the statement that
runs: an excluded table reached through any name form (quoting, case, database prefix, alias) in any position
(FROM, JOIN, subqueries in FROM/SELECT/WHERE, EXISTS, CTEs, UNION branches) is refused before anything runs;
personal data reached through aliases, CTEs, subqueries, expressions, stars and unions comes back masked."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import call_tools

pytestmark = pytest.mark.integration

EMAILS = ["alice@example.com", "bob@example.org"]
NAMES = ["Alice Liddell", "Bob Builder"]
SALARY = 987654

# The demo configuration excludes *.HR.* (snowflake.exclusions.patterns): every form of hr.employees.
NAME_FORMS = [
    "hr.employees", "HR.EMPLOYEES", "Hr.Employees", '"hr"."employees"', '"HR"."EMPLOYEES"', '"hr".employees',
    "demo.hr.employees", '"demo"."hr"."employees"', "hr . employees", "HR.employees",
]  # fmt: skip
POSITIONS = [
    "select * from {t}",
    "select e.salary as s from {t} as e",
    "select o.order_id from main.orders o join {t} e on e.id = o.order_id",
    "select x.s from (select salary as s from {t}) as x",
    "select (select max(salary) from {t}) as top, order_id from main.orders",
    "select order_id from main.orders where order_id in (select id from {t})",
    "select order_id from main.orders o where exists (select 1 from {t} e where e.id = o.order_id)",
    "with staff as (select * from {t}) select count(*) as n from staff",
    "with a as (select id from {t}), b as (select id from a) select * from b",
    "select order_id from main.orders union all select id from {t}",
    "select * from main.orders o, lateral (select salary from {t} e where e.id = o.order_id) l",
    "select count(*) as n from main.orders o left join (select id from {t}) e using (order_id)",
]


def _refusals() -> list[str]:
    return [p.format(t=name) for p, name in itertools.product(POSITIONS, NAME_FORMS)]


# What reads outside the warehouse's tables (no exclusion can name it): files, URLs, SQL text, the environment.
READERS = [
    "read_csv('{f}')", "read_csv_auto('{f}')", "read_text('{f}')", "read_blob('{f}')", "read_json('{f}')",
    "read_parquet('{f}')", "glob('{d}/*')", "'{f}'", '"{f}"', "query('select * from hr.employees')",
    "sniff_csv('{f}')", "'https://example.invalid/x.csv'",
]  # fmt: skip
READER_POSITIONS = [
    "select * from {r}",
    "select order_id from main.orders where order_id in (select 1 from {r})",
    "with f as (select * from {r}) select count(*) as n from f",
]
SCALAR_READERS = ["select getenv('HOME') as h", "select current_setting('home_directory') as h"]
CANARY = "canary-c4f1e"


# Personal data through every path a column can take to the result.
PII_QUERIES = [
    'select "Email Address" from main.customers',
    'select "Email Address" as x from main.customers',
    'select c."Email Address" as contact from main.customers c',
    "select e_mail from main.customers",
    "select e_mail as note from main.customers",
    'select "EMAIL " as v from main.customers',
    "select upper(e_mail) as v from main.customers",
    "select concat(full_name, '!') as label from main.customers",
    "select full_name || ' ' as label from main.customers",
    "with c as (select e_mail as k from main.customers) select k as v from c",
    "with c as (select * from main.customers) select e_mail as v from c",
    "select v from (select full_name as v from main.customers) s",
    "select s.v from (select t.w as v from (select e_mail as w from main.customers) t) s",
    "select * from main.customers",
    "select c.* from main.customers c",
    "select o.order_id, c.full_name as who from main.orders o join main.customers c on c.id = o.order_id",
    "select order_id as v from main.orders union all select e_mail from main.customers",
    "select case when id > 0 then e_mail end as v from main.customers",
    "select coalesce(null, full_name) as v from main.customers",
    "select max(e_mail) as v from main.customers",
    "select (select min(e_mail) from main.customers) as v",
    "select string_agg(full_name, ',') as v from main.customers",
]


def settings_with_exclusions(tmp_path: Path) -> Settings:
    """The demo configuration with its snowflake section on (a snow config naming the demo connection), so its
    exclusions (*.HR.*) are the ones in force, as on a platform with Snowflake configured."""
    config = tmp_path / "snow-config.toml"
    config.write_text('[connections.demo]\naccount = "acme"\nuser = "agent"\n')
    return settings_for(tmp_path / "ade", ADE_SNOWFLAKE_CONFIG=str(config))


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = settings_with_exclusions(tmp_path_factory.mktemp("leaks-wh"))
    path = Path(settings.warehouse("demo").path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as con:
        con.execute("create schema hr")
        con.execute("create table hr.employees (id integer, order_id integer, salary integer)")
        con.execute(f"insert into hr.employees values (1, 1, {SALARY})")
        con.execute("create table main.orders (order_id integer, amount integer)")
        con.execute("insert into main.orders values (1, 10), (2, 20)")
        con.execute(
            'create table main.customers (id integer, "Email Address" varchar, e_mail varchar, "EMAIL " varchar, '
            "full_name varchar, lifetime_value integer)"
        )
        for i, (email, name) in enumerate(zip(EMAILS, NAMES, strict=True), start=1):
            con.execute(
                "insert into main.customers values (?, ?, ?, ?, ?, ?)", [i, email, email, email, name, 5]
            )
    return settings


@pytest.fixture(scope="module")
def server(warehouse: Settings) -> Any:
    return build_server(warehouse, only="warehouse")


def refused_all(server: Any, queries: list[str]) -> list[tuple[bool, Any]]:
    """Every query refused with table_excluded (the answers, for what they must not contain)."""
    answers = call_tools(server, [("warehouse_execute", {"sql": q}) for q in queries])
    wrong = [
        (q, a)
        for q, (ok, a) in zip(queries, answers, strict=True)
        if ok or a.get("error") != "table_excluded"
    ]
    assert not wrong, wrong[:5]
    return answers


def test_excluded_tables_are_refused_in_every_form_and_position(server: Any) -> None:
    queries = _refusals()
    answers = refused_all(server, queries)
    assert all(str(SALARY) not in json.dumps(a) for _, a in answers)
    assert len(queries) == len(POSITIONS) * len(NAME_FORMS)


def test_reads_outside_the_tables_are_refused(server: Any, warehouse: Settings) -> None:
    folder = Path(warehouse.home)
    (folder / "leak.csv").write_text(f"secret\n{CANARY}\n")
    queries = [
        p.format(r=r.format(f=folder / "leak.csv", d=folder))
        for p, r in itertools.product(READER_POSITIONS, READERS)
    ]
    queries += SCALAR_READERS
    answers = refused_all(server, queries)
    assert CANARY not in json.dumps(answers)


@pytest.mark.slow  # 22 audited live runs, recorded in the background: a minute on a loaded machine
def test_personal_data_is_masked_on_every_path(server: Any) -> None:
    answers = call_tools(server, [("warehouse_execute", {"sql": q}) for q in PII_QUERIES])
    leaks = []
    for query, (ok, answer) in zip(PII_QUERIES, answers, strict=True):
        assert ok, (query, answer)
        text = json.dumps(answer["rows"])
        if any(v in text for v in EMAILS + NAMES) or not answer["masked_columns"]:
            leaks.append((query, answer["rows"][:1], answer["masked_columns"]))
    assert not leaks, leaks


def test_harmless_queries_still_answer(server: Any) -> None:
    queries = [
        "select order_id, amount from main.orders order by 1",
        "select id, lifetime_value from main.customers order by 1",
        "with o as (select * from main.orders) select sum(amount) as total from o",
        "select count(*) as n from main.customers",
    ]
    answers = call_tools(server, [("warehouse_execute", {"sql": q}) for q in queries])
    for query, (ok, answer) in zip(queries, answers, strict=True):
        assert ok and not answer["masked_columns"], (query, answer)
    assert answers[0][1]["rows"] == [{"order_id": 1, "amount": 10}, {"order_id": 2, "amount": 20}]
    assert answers[2][1]["rows"] == [{"total": 30}]
