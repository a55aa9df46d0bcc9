"""The metadata-only proxy and the discovery fallbacks over a scripted runner (no Snowflake, no CLI)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ade_platform.lib.guard import GuardPolicy
from ade_platform.lib.snowflake.discovery import SnowflakeService
from ade_platform.lib.snowflake.errors import CliFailure, SnowflakeError
from ade_platform.lib.snowflake.proxy import PRESENT, Proxy, ProxyLimits
from tests.fakes.snowflake_runner import ScriptedRunner

POLICY = GuardPolicy(exclusion_patterns=("*.PROD_HR.*",))
LIMITS = ProxyLimits(max_rows=10, max_scalar_rows=5, max_stat_rows=3, variant_sample_size=10)


def proxy(answer: Any, **kw: Any) -> tuple[Proxy, ScriptedRunner]:
    runner = ScriptedRunner(answer)
    return Proxy(runner, POLICY, kw.pop("limits", LIMITS), **kw), runner


def present(**row: Any) -> dict[str, Any]:
    return {PRESENT: True, **row}


def test_data_answers_do_not_depend_on_which_rows_exist() -> None:
    """A predicate's answer must not show: an empty result and a hit give the same answer."""
    sql = "SELECT 1 AS hit FROM customers WHERE email = 'a@b.c'"
    hit, _ = proxy(lambda q: [present(HIT=1)])
    miss, runner = proxy(lambda q: [{PRESENT: None, "HIT": None}])
    assert hit.execute_sql(sql) == miss.execute_sql(sql)
    answer = miss.execute_sql(sql)
    assert answer["columns"] == [{"name": "HIT", "type": "UNKNOWN", "null_percentage": None}]
    assert answer["row_count"] is None and answer["stats_withheld"]
    assert (
        runner.log[0].startswith("SELECT _ade_q.* FROM (SELECT 1 AS _ade_anchor)")
        and "LIMIT 1" in runner.log[0]
    )
    assert "a@b.c" not in str(answer)


def test_data_with_safe_stats_counts_in_the_server_and_infers_variants() -> None:
    rows = [
        present(ID=1, EMAIL="x@y.z", PROFILE={"plan": "gold-secret", "n": 5}),
        present(ID=2, EMAIL=None, PROFILE={"plan": "basic"}),
    ]
    p, runner = proxy(lambda q: rows)
    answer = p.execute_sql("SELECT id, email, profile FROM customers")
    assert answer["row_count"] == 2 and answer["row_count_exact"]
    assert {c["name"]: (c["type"], c["null_percentage"]) for c in answer["columns"]} == {
        "ID": ("NUMBER", 0.0),
        "EMAIL": ("VARCHAR", 50.0),
        "PROFILE": ("VARIANT", 0.0),
    }
    assert (
        "plan: string;" in answer["variant_interfaces"]["PROFILE"]
        and "n?: number;" in answer["variant_interfaces"]["PROFILE"]
    )
    assert "gold-secret" not in str(answer) and "x@y.z" not in str(answer)
    assert "LIMIT 4" in runner.log[0]


def test_past_max_stat_rows_the_count_runs_in_snowflake() -> None:
    def answer(q: str) -> list[dict[str, Any]]:
        if q.startswith("SELECT COUNT(*) AS ADE_N"):
            return [{"ADE_N": 1000, "ADE_C0": 750}]
        return [present(ID=i) for i in range(4)]

    p, runner = proxy(answer)
    result = p.execute_sql("SELECT id FROM customers")
    assert result["row_count"] == 1000 and result["columns"][0]["null_percentage"] == 25.0
    assert "COUNT(ID) AS ADE_C0" in runner.log[1]


def test_dynamic_pivot_names_are_withheld() -> None:
    p, _ = proxy(lambda q: [present(**{"'gold'": 1})])
    answer = p.execute_sql("SELECT * FROM (SELECT tier, id FROM t) PIVOT (COUNT(id) FOR tier IN (ANY))")
    assert answer["columns"][0]["name"] == "column_1" and answer["names_withheld"]


def test_execute_scalar_on_data_is_the_reclassified_redacted_answer() -> None:
    p, _runner = proxy(lambda q: [{"_ADE_PRESENT": True, "EMAIL": "x-secret@example.com"}])
    answer = p.execute_scalar("SELECT email FROM t", 5)
    assert answer["reclassified"] and (answer["error"], answer["code"]) == ("QUERY_CLASSIFIED", "E1002")
    assert answer["classification"] == "DATA" and answer["_queryType"] == "data" and answer["redacted"]
    assert "x-secret" not in str(answer) and answer["_rowCount"] == answer["row_count"] == 1


def test_unwrappable_data_is_not_executed() -> None:
    p, runner = proxy(lambda q: pytest.fail("must not run"))
    # (LIST, EXPLAIN and a ';' inside a comment are METADATA/SCALAR since issue 10: not examples here.)
    for sql in [
        "SELECT * /* /* */ FROM t",
        "SELECT FROM WHERE",
        "SELECT * FROM t WHERE x = 1 /* a; */ ORDER",
    ]:
        answer = p.execute_sql(sql)
        assert answer["executed"] is False and answer["columns"] is None
    assert runner.log == []


def fails(message: str, code: str = "QUERY_FAILED") -> Any:
    def answer(q: str) -> list[dict[str, Any]]:
        raise CliFailure(
            code, message, re.match(r"\d{6}", message).group(0) if message[:6].isdigit() else None
        )

    return answer


def test_runtime_errors_are_withheld_and_compile_errors_scrubbed() -> None:
    p, _ = proxy(fails("100038 (22018): Numeric value 'jane@corp.com' is not recognized"))
    with pytest.raises(SnowflakeError) as err:
        p.execute_sql("SELECT CAST(email AS INT) FROM customers")
    assert (
        err.value.code == "QUERY_FAILED" and "withheld" in err.value.detail and "jane" not in err.value.detail
    )
    p, _ = proxy(fails("002003 (42S02): Table 'SECRET_VALUE_42' does not exist", "OBJECT_NOT_FOUND"))
    with pytest.raises(SnowflakeError) as err:
        p.execute_sql("SELECT * FROM t WHERE x = 'SECRET_VALUE_42'")
    assert err.value.code == "OBJECT_NOT_FOUND" and "SECRET_VALUE_42" not in err.value.detail
    p, _ = proxy(
        fails("001003 (42000): Parser Error: syntax error\nLINE 1: SELECT 'secret' ...", "QUERY_FAILED")
    )
    with pytest.raises(SnowflakeError) as err:
        p.execute_scalar("SELECT COUNT(*) FROM t", 5)
    assert "LINE 1" not in err.value.detail and "secret" not in err.value.detail
    p, _ = proxy(fails("Connection dev is not configured", "AUTH_FAILED"))
    with pytest.raises(SnowflakeError) as err:
        p.execute_sql("SELECT * FROM t")
    assert err.value.code == "AUTH_FAILED"


def test_scalar_values_are_rechecked_after_execution() -> None:
    p, _ = proxy(lambda q: [{"N": 3}])
    assert p.execute_scalar("SELECT COUNT(*) AS N FROM t", 5)["rows"] == [{"N": 3}]
    p, _ = proxy(lambda q: [{"N": "a-value"}])
    answer = p.execute_sql("SELECT COUNT(*) AS N FROM t")
    assert answer["redacted"] and "a-value" not in str(answer)


def test_refusals_map_to_spec_codes() -> None:
    p, runner = proxy(lambda q: pytest.fail("must not run"))
    cases = {
        "SELECT * FROM prod_hr.salaries": "EXCLUDED_OBJECT",
        "DELETE FROM t": "WRITE_REFUSED",
        "SELECT 1; SELECT 2": "MULTI_STATEMENT",
    }
    for sql, code in cases.items():
        with pytest.raises(SnowflakeError) as err:
            p.execute_sql(sql)
        assert err.value.code == code
    with pytest.raises(SnowflakeError) as err:  # refused before the reclassified redacted answer too
        p.execute_scalar("SELECT * FROM prod_hr.salaries", 5)
    assert err.value.code == "EXCLUDED_OBJECT"
    for ddl, code in [
        ("INSERT INTO t VALUES (1)", "NOT_DDL"),
        ("SELECT 1", "NOT_DDL"),
        ("CREATE VIEW v AS SELECT * FROM t", "WRITE_REFUSED"),
        ("CALL p()", "WRITE_REFUSED"),
        ("ALTER SESSION SET TIMEZONE = 'UTC'", "NOT_DDL"),
        ("DROP TABLE prod_hr.x", "EXCLUDED_OBJECT"),
    ]:
        with pytest.raises(SnowflakeError) as err:
            p.check_ddl(ddl)
        assert err.value.code == code, ddl
    assert p.check_ddl("CREATE TABLE t2 (id INT)").statement == "CREATE"
    assert runner.log == []
    allowed = Proxy(ScriptedRunner(lambda q: []), POLICY, ProxyLimits(allow_ddl_with_queries=True))
    assert allowed.check_ddl("CREATE VIEW v AS SELECT * FROM t").statement == "CREATE"


def test_catalog_dependencies_extend_exclusions_through_views() -> None:
    catalog = (None, {"DB.APP.V_SALARY": ["DB.PROD_HR.SALARIES"]})
    p, _ = proxy(lambda q: [], catalog=lambda: catalog)
    with pytest.raises(SnowflakeError) as err:
        p.execute_sql("SELECT COUNT(*) FROM v_salary")
    assert err.value.code == "EXCLUDED_OBJECT"


def test_metadata_rows_are_filtered_and_capped() -> None:
    rows = [{"name": f"T{i}", "database_name": "DB", "schema_name": "APP"} for i in range(12)]
    rows.append({"name": "SALARIES", "database_name": "DB", "schema_name": "PROD_HR"})
    p, _ = proxy(lambda q: rows)
    answer = p.execute_sql("SHOW TABLES")
    assert answer["row_count"] == 10 and answer["truncated"] and "SALARIES" not in str(answer)


def test_ddl_falls_back_to_information_schema_once() -> None:
    def answer(q: str) -> list[dict[str, Any]]:
        if "GET_DDL" in q:
            raise CliFailure("OBJECT_NOT_FOUND", "002003 (42S02): Unknown function GET_DDL", "002003")
        if "INFORMATION_SCHEMA.TABLES" in q:
            return [{"TABLE_NAME": "T", "TABLE_TYPE": "BASE TABLE"}]
        if "INFORMATION_SCHEMA.COLUMNS" in q:
            return [{"COLUMN_NAME": "ID", "ORDINAL_POSITION": 1, "DATA_TYPE": "NUMBER"}]
        if "INFORMATION_SCHEMA.VIEWS" in q:
            return [
                {
                    "TABLE_CATALOG": "DB",
                    "TABLE_SCHEMA": "APP",
                    "TABLE_NAME": "V",
                    "VIEW_DEFINITION": "select * from t",
                }
            ]
        if "OBJECT_DEPENDENCIES" in q:
            raise CliFailure(
                "QUERY_FAILED", "002003 (42S02): schema SNOWFLAKE.ACCOUNT_USAGE does not exist", "002003"
            )
        return []

    runner = ScriptedRunner(answer)
    service = SnowflakeService(runner, POLICY)
    first = service.get_ddl("table", "T", None, None)
    assert (
        first["source"] == "information_schema"
        and first["ddl"] == "create or replace TABLE DB.APP.T (\n\tID NUMBER\n);\n"
    )
    service.get_ddl("table", "T", None, None)
    assert sum("GET_DDL" in q for q in runner.log) == 1  # remembered as unavailable
    lineage = service.get_lineage("T", "table", None, None, "downstream", None)
    assert lineage["source"] == "view_definitions" and [n["name"] for n in lineage["nodes"]] == ["DB.APP.V"]
    with pytest.raises(SnowflakeError) as err:
        service.get_ddl("table", "PROD_HR.SALARIES", None, None)
    assert err.value.code == "EXCLUDED_OBJECT"
    with pytest.raises(SnowflakeError) as err:
        service.get_ddl("warehouse", "WH", None, None)
    assert err.value.code == "invalid_argument"


def test_internal_statements_are_guarded() -> None:
    service = SnowflakeService(ScriptedRunner(lambda q: []), POLICY)
    with pytest.raises(RuntimeError):
        service.metadata("SELECT * FROM customers")  # our own statements must be METADATA
    with pytest.raises(SnowflakeError):
        service.metadata("SELECT GET_DDL('TABLE', 'DB.PROD_HR.SALARIES')")


def test_get_ddl_and_object_dependencies_when_available() -> None:
    def answer(q: str) -> list[dict[str, Any]]:
        if "AS I, GET_DDL" in q:  # the sync batch of GET_DDL calls
            return [{"I": 0, "DDL": "create or replace TABLE DB.APP.T (ID NUMBER);"}]
        if "GET_DDL" in q:
            return [{"DDL": "create or replace view DB.APP.V as select * from t;"}]
        if "OBJECT_DEPENDENCIES" in q:
            return [
                {
                    "REFERENCED_DATABASE": "DB",
                    "REFERENCED_SCHEMA": "APP",
                    "REFERENCED_OBJECT_NAME": "T",
                    "REFERENCED_OBJECT_DOMAIN": "TABLE",
                    "REFERENCING_DATABASE": "DB",
                    "REFERENCING_SCHEMA": "APP",
                    "REFERENCING_OBJECT_NAME": "V",
                    "REFERENCING_OBJECT_DOMAIN": "VIEW",
                },
                {
                    "REFERENCED_DATABASE": "DB",
                    "REFERENCED_SCHEMA": "PROD_HR",
                    "REFERENCED_OBJECT_NAME": "S",
                    "REFERENCED_OBJECT_DOMAIN": "TABLE",
                    "REFERENCING_DATABASE": "DB",
                    "REFERENCING_SCHEMA": "APP",
                    "REFERENCING_OBJECT_NAME": "V",
                    "REFERENCING_OBJECT_DOMAIN": "VIEW",
                },
            ]
        return []

    service = SnowflakeService(ScriptedRunner(answer), POLICY)
    ddl = service.get_ddl("view", "V", None, None)
    assert (
        ddl["source"] == "get_ddl" and "note" not in ddl and ddl["ddl"].startswith("create or replace view")
    )
    deps = service.get_dependencies("V", "view", None, None)
    assert deps["source"] == "object_dependencies"
    assert deps["dependencies"] == [  # DB.PROD_HR.S is excluded
        {
            "name": "DB.APP.T",
            "type": "TABLE",
            "REFERENCE_OBJECT_NAME": "DB.APP.T",
            "REFERENCE_OBJECT_TYPE": "TABLE",
        }
    ]

    from ade_platform.lib.snowflake.sync import Inventory, RepoObject, _apply_get_ddl

    inv = Inventory(
        objects=[
            RepoObject("table", "DB", "APP", "T", "reconstructed", "information_schema"),
            RepoObject("schema", "DB", None, "APP", "create schema DB.APP", "information_schema"),
        ]
    )
    _apply_get_ddl(service, inv)
    assert inv.objects[0].source == "get_ddl" and inv.objects[0].ddl.startswith("create or replace TABLE")
    assert inv.objects[1].source == "information_schema"  # containers keep their own CREATE only
