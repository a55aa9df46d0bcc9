"""Snowflake domain logic without Snowflake: names, metadata filtering, DDL, lineage, the repository, config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ade_platform.clients.snowflake import policy_from_settings
from ade_platform.config import ConfigError, load_settings
from ade_platform.lib.guard import GuardPolicy, matches_exclusion
from ade_platform.lib.snowflake import ddl
from ade_platform.lib.snowflake.errors import SnowflakeError
from ade_platform.lib.snowflake.lineage import Graph, dependency_map, edges_from_views, view_references
from ade_platform.lib.snowflake.metadata import (
    container_excluded,
    filter_rows,
    listing_kind_of,
    mask_personal,
    value_type,
)
from ade_platform.lib.snowflake.objects import OBJECT_TYPES, parse_name, quote_ident
from ade_platform.lib.snowflake.sync import Inventory, RepoObject, read_index, staleness, write_repository

POLICY = GuardPolicy(
    exclusion_patterns=("*.PROD_HR.*", "*_BACKUP", "PROD_*"), default_database="DB", default_schema="APP"
)


def test_object_types_follow_the_spec_without_cortex() -> None:
    assert OBJECT_TYPES[:5] == ("database", "schema", "table", "view", "materialized_view")
    assert {"stage", "file_format", "task", "stream", "warehouse", "compute_pool", "role", "user"} <= set(
        OBJECT_TYPES
    )
    assert {"network_rule", "integration", "secret", "tag"} <= set(OBJECT_TYPES)
    assert not [t for t in OBJECT_TYPES if "cortex" in t]


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("customers", "table", ("DB", "APP", "CUSTOMERS")),
        ("s.t", "view", ("DB", "S", "T")),
        ('"My Db"."s"."T"', "table", ("My Db", "s", "T")),
        ("analytics", "schema", ("DB", None, "ANALYTICS")),
        ("other.analytics", "schema", ("OTHER", None, "ANALYTICS")),
        ("wh", "warehouse", (None, None, "WH")),
    ],
)
def test_parse_name(text: str, kind: str, expected: tuple) -> None:
    obj = parse_name(text, kind, default_database="DB", default_schema="APP")
    assert (obj.database, obj.schema, obj.name) == expected


def test_parse_name_rejects_bad_input() -> None:
    for text, kind in [("a.b.c.d", "table"), ("", "table"), ('"unbalanced', "table"), ("x\ny", "table")]:
        with pytest.raises(SnowflakeError):
            parse_name(text, kind)
    fn = parse_name("f(number, varchar(10))", "function", default_database="DB", default_schema="S")
    assert fn.fqn == "DB.S.F(NUMBER, VARCHAR(10))"
    with pytest.raises(SnowflakeError):
        parse_name("f(x; drop)", "function")
    assert quote_ident("lower") == '"lower"' and quote_ident("UPPER_1") == "UPPER_1"


def test_container_exclusion_is_whole_container_only() -> None:
    assert container_excluded(POLICY, "DB") is None  # *.PROD_HR.* excludes a schema inside, not DB
    assert container_excluded(POLICY, "DB", "PROD_HR") == "*.PROD_HR.*"
    assert container_excluded(POLICY, "PROD_SALES") == "PROD_*"
    assert container_excluded(POLICY, "DB", "APP") is None


def test_metadata_rows_of_excluded_objects_are_dropped() -> None:
    show = [
        {"name": "CUSTOMERS", "database_name": "DB", "schema_name": "APP"},
        {"name": "CUSTOMERS_BACKUP", "database_name": "DB", "schema_name": "APP"},
        {"name": "SALARIES", "database_name": "DB", "schema_name": "PROD_HR"},
    ]
    kept, truncated = filter_rows(show, POLICY, listing_kind="TABLE")
    assert [r["name"] for r in kept] == ["CUSTOMERS"] and not truncated
    info = [
        {"TABLE_CATALOG": "DB", "TABLE_SCHEMA": "PROD_HR", "TABLE_NAME": "SALARIES", "COLUMN_NAME": "SSN"},
        {"TABLE_CATALOG": "DB", "TABLE_SCHEMA": "APP", "TABLE_NAME": "T", "COLUMN_NAME": "ID"},
        {
            "REFERENCED_DATABASE": "DB",
            "REFERENCED_SCHEMA": "PROD_HR",
            "REFERENCED_OBJECT_NAME": "S",
            "REFERENCING_DATABASE": "DB",
            "REFERENCING_SCHEMA": "APP",
            "REFERENCING_OBJECT_NAME": "V",
        },
        {"CATALOG_NAME": "DB", "SCHEMA_NAME": "PROD_HR"},
        {"name": "DB.PROD_HR.SALARIES", "granted_on": "TABLE", "privilege": "SELECT"},
    ]
    assert [r.get("TABLE_NAME") for r in filter_rows(info, POLICY)[0]] == ["T"]
    databases = [{"name": "DB"}, {"name": "PROD_X"}]
    assert filter_rows(databases, POLICY, listing_kind="DATABASE")[0] == [{"name": "DB"}]
    rows, truncated = filter_rows(
        [{"name": f"T{i}", "database_name": "DB", "schema_name": "APP"} for i in range(5)],
        POLICY,
        listing_kind="TABLE",
        limit=2,
    )
    assert len(rows) == 2 and truncated
    typed = GuardPolicy(excluded_object_types=frozenset({"STAGE"}))
    assert filter_rows([{"name": "S", "kind": "STAGE"}], typed)[0] == []


def test_people_are_masked_in_metadata() -> None:
    assert mask_personal({"name": "JDOE", "email": "j@x.com", "login_name": "JDOE", "disabled": "false"}) == {
        "name": "JDOE",
        "email": "***",
        "login_name": "***",
        "disabled": "false",
    }
    assert mask_personal({"property": "EMAIL", "value": "j@x.com"})["value"] == "***"
    assert mask_personal({"property": "DISABLED", "value": "false"})["value"] == "false"


def test_listing_kind_and_value_types() -> None:
    assert listing_kind_of("SHOW TERSE MATERIALIZED VIEWS IN DATABASE X") == "MATERIALIZED VIEW"
    assert (
        listing_kind_of("show user functions") == "FUNCTION" and listing_kind_of("SHOW POLICIES") == "POLICY"
    )
    assert value_type([1, None, 2]) == "NUMBER" and value_type(["12.50", "3"]) == "NUMBER"
    assert value_type(["2024-01-31"]) == "DATE" and value_type(["2024-01-31 10:00:00.000"]) == "TIMESTAMP"
    assert value_type([{"a": 1}, [1]]) == "VARIANT" and value_type(["x", 1]) == "VARIANT"
    assert (
        value_type([None]) == "UNKNOWN" and value_type([True]) == "BOOLEAN" and value_type(["x"]) == "VARCHAR"
    )


def test_ddl_reconstruction() -> None:
    columns = [
        {
            "COLUMN_NAME": "EMAIL",
            "ORDINAL_POSITION": 2,
            "DATA_TYPE": "TEXT",
            "CHARACTER_MAXIMUM_LENGTH": 100,
            "IS_NULLABLE": "NO",
            "COMMENT": "it's private",
        },
        {
            "COLUMN_NAME": "ID",
            "ORDINAL_POSITION": 1,
            "DATA_TYPE": "NUMBER",
            "NUMERIC_PRECISION": 38,
            "NUMERIC_SCALE": 0,
            "IS_NULLABLE": "YES",
            "COLUMN_DEFAULT": "0",
        },
        {"COLUMN_NAME": "at", "ORDINAL_POSITION": 3, "DATA_TYPE": "TIMESTAMP_NTZ", "DATETIME_PRECISION": 9},
    ]
    text = ddl.table_ddl("DB", "APP", "T", columns, {"COMMENT": "orders", "IS_TRANSIENT": "YES"})
    assert text == (
        "create or replace TRANSIENT TABLE DB.APP.T (\n\tID NUMBER(38,0) DEFAULT 0,\n"
        "\tEMAIL VARCHAR(100) NOT NULL COMMENT 'it''s private',\n\t\"at\" TIMESTAMP_NTZ(9)\n) COMMENT='orders';\n"
    )
    assert ddl.view_ddl("DB", "S", "V", "select 1") == "create or replace VIEW DB.S.V as\nselect 1;\n"
    assert ddl.view_ddl("DB", "S", "V", "CREATE VIEW S.V AS SELECT 1;") == "CREATE VIEW S.V AS SELECT 1;\n"
    assert ddl.schema_ddl("DB", "S") == "create or replace schema DB.S;\n"
    assert ddl.ddl_hash("a  \r\nb") == ddl.ddl_hash("a\nb;\n\n")
    row = {
        "FUNCTION_NAME": "F",
        "ARGUMENT_SIGNATURE": "(X NUMBER, Y VARCHAR)",
        "DATA_TYPE": "NUMBER",
        "FUNCTION_LANGUAGE": "SQL",
        "FUNCTION_DEFINITION": "x + 1",
    }
    assert ddl.routine_signature(row, "FUNCTION") == "F(NUMBER, VARCHAR)"
    assert "returns NUMBER\nlanguage SQL\nas $$\nx + 1\n$$;" in ddl.routine_ddl("FUNCTION", "DB", "S", row)


def test_view_lineage_from_definitions() -> None:
    sql = "CREATE VIEW APP.V AS WITH c AS (SELECT * FROM customers) SELECT * FROM c JOIN other.s.t ON TRUE"
    assert sorted(view_references(sql, "DB", "APP")) == ["DB.APP.CUSTOMERS", "OTHER.S.T"]
    assert view_references("not sql at all (", "DB", "APP") == []
    rows = [
        {
            "TABLE_CATALOG": "DB",
            "TABLE_SCHEMA": "APP",
            "TABLE_NAME": "V1",
            "VIEW_DEFINITION": "select * from t",
        },
        {
            "TABLE_CATALOG": "DB",
            "TABLE_SCHEMA": "APP",
            "TABLE_NAME": "V2",
            "VIEW_DEFINITION": "select * from v1",
        },
    ]
    edges, unparsed = edges_from_views(rows)
    assert edges == [("DB.APP.T", "DB.APP.V1"), ("DB.APP.V1", "DB.APP.V2")] and unparsed == 0
    graph = Graph.of(edges)
    down = graph.walk("DB.APP.T", "downstream", None, 10)
    assert [(n["name"], n["distance"]) for n in down["nodes"]] == [("DB.APP.V1", 1), ("DB.APP.V2", 2)]
    assert graph.walk("DB.APP.T", "downstream", 1, 10)["nodes"][0]["name"] == "DB.APP.V1"
    assert graph.walk("DB.APP.V2", "both", None, 1)["truncated"] is True
    assert dependency_map(edges) == {"DB.APP.V1": ["DB.APP.T"], "DB.APP.V2": ["DB.APP.V1"]}


def test_repository_layout_index_and_staleness(tmp_path: Path) -> None:
    inv = Inventory(
        objects=[
            RepoObject("database", "DB", None, "DB", "create database DB", "information_schema"),
            RepoObject("schema", "DB", None, "APP", "create schema DB.APP", "information_schema"),
            RepoObject("table", "DB", "APP", "T", "create table DB.APP.T (ID NUMBER)", "get_ddl"),
            RepoObject("view", "DB", "APP", "../../escape", "create view x as select 1", "get_ddl"),
            RepoObject("function", "DB", "APP", "F(NUMBER)", "create function ...", "get_ddl"),
        ],
        edges=[("DB.APP.T", "DB.APP.V")],
    )
    summary = write_repository(tmp_path, inv, connection="dev", databases=["DB"])
    assert summary["synced"] == 5 and summary["written"] == 5
    assert (tmp_path / "src/DB/_database.sql").read_text() == "create database DB;\n"
    assert (tmp_path / "src/DB/APP/_schema.sql").exists() and (tmp_path / "src/DB/APP/tables/T.sql").exists()
    assert (tmp_path / "src/DB/APP/functions/F(NUMBER).sql").exists()
    assert (
        not (tmp_path.parent / "escape.sql").exists()
        and (tmp_path / "src/DB/APP/views/_.._.._escape.sql").exists()
    )
    index = read_index(tmp_path)
    assert index is not None and index["dependencies"] == [{"from": "DB.APP.T", "to": "DB.APP.V"}]
    assert write_repository(tmp_path, inv, connection="dev", databases=["DB"])["unchanged"] == 5
    changed = [RepoObject(o.kind, o.database, o.schema, o.name, o.ddl, o.source) for o in inv.objects[:3]]
    changed[2].ddl = "create table DB.APP.T (ID NUMBER, X INT)"
    changed.append(RepoObject("table", "DB", "APP", "NEW", "create table DB.APP.NEW (A INT)", "get_ddl"))
    report = staleness(index, changed)
    assert [s["objectName"] for s in report["stale"]] == ["DB.APP.T"] and report["is_stale"]
    assert {d["objectType"] for d in report["dropped"]} == {"view", "function"}
    assert report["new"] == [{"objectName": "DB.APP.NEW", "objectType": "table"}]
    # A later sync removes files of objects that disappeared (only files the index listed).
    (tmp_path / "notes.txt").write_text("mine")
    summary = write_repository(tmp_path, Inventory(objects=changed), connection="dev", databases=["DB"])
    assert summary["removed"] == 2 and (tmp_path / "notes.txt").exists()
    assert json.loads((tmp_path / ".object-repository.json").read_text())["version"] == 1


def test_project_yaml_regexes_are_kept_as_regexes_and_replace_the_defaults(tmp_path: Path) -> None:
    # Classes, groups and alternation are fine: the spec's patterns are regular expressions.
    (tmp_path / "project.yaml").write_text("exclusions: {patterns: ['^(HR|FIN)_[0-9]+$', '_BACKUP$']}\n")
    (tmp_path / "ade.yaml").write_text("home: .ade\nsnowflake: {project_file: project.yaml}\n")
    section = load_settings(tmp_path / "ade.yaml", env={}).snowflake
    assert section.exclusions.regexes == ["^(HR|FIN)_[0-9]+$", "_BACKUP$"]
    policy = policy_from_settings(section)
    assert matches_exclusion("DB.HR_2024X.T", policy, kind="TABLE") is None  # not all digits
    assert matches_exclusion("DB.S.fin_42", policy) == "^(HR|FIN)_[0-9]+$"
    assert matches_exclusion("PROD_SALES.S.T", policy) is None  # the project file replaced the defaults
    (tmp_path / "project.yaml").write_text("exclusions: {patterns: ['^(unclosed']}\n")
    with pytest.raises(ConfigError, match="unclosed"):
        load_settings(tmp_path / "ade.yaml", env={})


def test_snowflake_settings_from_ade_yaml_and_project_file(tmp_path: Path) -> None:
    (tmp_path / "project.yaml").write_text(
        "exclusions: {patterns: ['^PROD_', '_BACKUP$'], objectTypes: [SNAPSHOT]}\n"
        "snowcli: {connection: dev, defaults: {warehouse: WH, role: SYSADMIN}}\n"
        "guardrail: {maxScalarRows: 500, variantAnalysis: {sampleSize: 50}}\n"
        "sync: {targetDir: ./repo}\n"
    )
    (tmp_path / "ade.yaml").write_text(
        "home: .ade\nsnowflake:\n  project_file: project.yaml\n  timeoutSeconds: 30\n  guardrail: {max_stat_rows: 9}\n"
    )
    section = load_settings(tmp_path / "ade.yaml", env={}).snowflake
    assert section is not None and section.connection == "dev" and section.timeout_seconds == 30
    assert section.exclusions.regexes == ["^PROD_", "_BACKUP$"] and section.exclusions.object_types == [
        "SNAPSHOT"
    ]
    assert section.guardrail.max_scalar_rows == 500 and section.guardrail.variant_sample_size == 50
    assert section.guardrail.max_stat_rows == 9 and section.defaults.warehouse == "WH"
    assert section.sync.target_dir == (tmp_path / "repo").resolve()
    assert load_settings(tmp_path / "ade.yaml", env={"SNOW_CONNECTION": "x"}).snowflake.connection == "x"
    (tmp_path / "only.yaml").write_text("home: .ade\n")
    via_env = load_settings(
        tmp_path / "only.yaml", env={"SDAIDF_CONFIG_PATH": str(tmp_path / "project.yaml")}
    )
    assert via_env.snowflake is not None and via_env.snowflake.connection == "dev"
    assert load_settings(tmp_path / "only.yaml", env={}).snowflake is None
    (tmp_path / "bad.yaml").write_text("home: .ade\nsnowflake: {exclusions: {patterns: ['a.b.c.d']}}\n")
    with pytest.raises(ConfigError, match="exclusion"):
        load_settings(tmp_path / "bad.yaml", env={})
    (tmp_path / "badregex.yaml").write_text("exclusions: {patterns: ['^(A|B']}\n")
    with pytest.raises(ConfigError, match="regular expression"):
        load_settings(tmp_path / "only.yaml", env={"SDAIDF_CONFIG_PATH": str(tmp_path / "badregex.yaml")})


def test_every_snowflake_code_is_registered() -> None:
    from ade_platform.lib.snowflake.errors import E_CODES
    from mcp_bridge.errors import ERROR_CODES

    assert set(E_CODES) <= set(ERROR_CODES)
    assert len(set(E_CODES.values())) == len(E_CODES)
