"""snowfakery.explain_errors through MCP: each common recipe error located, its rule named, its fix exact."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastmcp import FastMCP

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tool, call_tools, list_tools
from tests.mcp.test_snowfakery_tools import snowfakery_settings

EXPLAIN = "snowfakery.explain_errors"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[FastMCP, Settings]:
    root = tmp_path_factory.mktemp("explain")
    settings = snowfakery_settings(root)
    return build_server(settings, only="snowfakery"), settings


def only(answer: dict[str, Any]) -> dict[str, Any]:
    assert len(answer["explanations"]) == 1, answer["explanations"]
    return answer["explanations"][0]


# (recipe text, reported line, fix line, line before, line after, words the rule must contain)
CASES: dict[str, tuple[str, int, int, str, str, tuple[str, ...]]] = {
    "unknown_fake": (
        "- object: Person\n  fields:\n    name:\n      fake: FirstNam\n",
        3,
        4,
        "      fake: FirstNam",
        "      fake: first_name",
        ("Faker provider",),
    ),
    "unknown_fake_in_formula": (
        "- object: Person\n  fields:\n    name: ${{fake.FirstNam}}\n",
        3,
        3,
        "    name: ${{fake.FirstNam}}",
        "    name: ${{fake.first_name}}",
        ("Faker provider",),
    ),
    "reference_to_undefined_object": (
        "- object: Account\n- object: Person\n  fields:\n    account:\n      reference: Acount\n",
        4,
        5,
        "      reference: Acount",
        "      reference: Account",
        ("object (table) or a nickname", "Account"),
    ),
    "reference_to_misspelt_nickname": (
        "- object: Account\n  nickname: main_account\n- object: Person\n  fields:\n"
        "    account: ${{reference('main_acount')}}\n",
        5,
        5,
        "    account: ${{reference('main_acount')}}",
        "    account: ${{reference('main_account')}}",
        ("nickname", "main_account"),
    ),
    "statement_without_object": (
        "- object: Account\n- fields:\n    name: x\n  count: 3\n",
        2,
        2,
        "- fields:",
        "- object: NewObject\n  fields:",
        ("`object: <Name>`", "'object' is required"),
    ),
    "object_name_of_the_wrong_type": (
        "- object: [Account, Contact]\n",
        1,
        1,
        "- object: [Account, Contact]",
        "- object: Account",
        ("`object` must be a string",),
    ),
    "misspelt_statement_key": (
        "- object: Person\n  feilds:\n    name: x\n",
        2,
        2,
        "  feilds:",
        "  fields:",
        ("allows only the keys", "fields"),
    ),
    "yaml_indentation": (
        "- object: Person\n  fields:\n    name: x\n   title: y\n",
        4,
        4,
        "   title: y",
        "    title: y",
        ("indented with spaces",),
    ),
    "yaml_unclosed_flow_mapping": (
        "- object: Person\n  fields: {name: x\n",
        3,
        2,
        "  fields: {name: x",
        "  fields: {name: x}",
        ("closed with `}`",),
    ),
    "yaml_tab": (
        "- object: Person\n  fields:\n\tname: x\n",
        3,
        3,
        "\tname: x",
        "  name: x",
        ("spaces only",),
    ),
    "unknown_plugin": (
        "- plugin: snowfakery.standard_plugins.Countrs\n- object: Person\n",
        1,
        1,
        "- plugin: snowfakery.standard_plugins.Countrs",
        "- plugin: snowfakery.standard_plugins.Counters",
        ("importable plugin class",),
    ),
    "plugin_outside_the_allow_list": (
        "- plugin: mypackage.Thing\n- object: Person\n",
        1,
        1,
        "- plugin: mypackage.Thing",
        "",
        ("allow-list",),
    ),
    "formula_missing_parenthesis": (
        "- object: Person\n  fields:\n    n: ${{ random_number(min=1, max=5 }}\n",
        3,
        3,
        "    n: ${{ random_number(min=1, max=5 }}",
        "    n: ${{ random_number(min=1, max=5) }}",
        ("one Jinja expression",),
    ),
    "formula_dangling_operator": (
        "- object: Person\n  fields:\n    n: ${{ 1 + }}\n",
        3,
        3,
        "    n: ${{ 1 + }}",
        "    n: ${{ 1 }}",
        ("operand on each side",),
    ),
    "formula_misspelt_field": (
        "- object: Person\n  fields:\n    name: Ann\n    greeting: Hello ${{nmae}}\n",
        4,
        4,
        "    greeting: Hello ${{nmae}}",
        "    greeting: Hello ${{name}}",
        ("undefined",),
    ),
    "misspelt_function": (
        "- object: Person\n  fields:\n    age:\n      random_numbr:\n        min: 1\n        max: 9\n",
        3,
        4,
        "      random_numbr:",
        "      random_number:",
        ("Snowfakery's functions",),
    ),
}


def test_explains_each_common_error_with_location_rule_and_fix(env: tuple[FastMCP, Settings]) -> None:
    server, _ = env
    tool = {t.name: t for t in list_tools(server)}[EXPLAIN]
    assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
    assert tool.output_schema["properties"]["explanations"]["type"] == "array"
    answers = call_tools(server, [(EXPLAIN, {"recipe_text": c[0]}) for c in CASES.values()])
    for (name, (_, line, fix_line, before, after, rule_words)), (ok, answer) in zip(
        CASES.items(), answers, strict=True
    ):
        assert ok, (name, answer)
        assert answer["valid"] is False, name
        explained = only(answer)
        assert explained["location"] == {
            "filename": "<recipe_text>",
            "line": line,
            **({"column": explained["location"]["column"]} if "column" in explained["location"] else {}),
        }, name
        assert explained["fix"]["line"] == fix_line, (name, explained)
        assert explained["fix"]["before"] == before, (name, explained)
        assert explained["fix"]["after"] == after, (name, explained)
        for word in rule_words:
            assert word in explained["rule"], (name, explained["rule"])
        assert explained["failing_construct"], name


def test_run_time_error_passed_back_and_fix_applies(env: tuple[FastMCP, Settings]) -> None:
    """`count: many` validates but fails the run: the run's error object, passed back, is explained; the
    suggested edit makes the recipe run."""
    server, _ = env
    recipe = "- object: Person\n  count: many\n  fields:\n    name: x\n"
    ok, error = call_tool(server, "snowfakery.run_recipe", {"recipe_text": recipe, "reps": 1})
    assert not ok and error["kind"] == "DataGenValueError"
    (ok1, from_object), (ok2, from_message) = call_tools(
        server,
        [
            (EXPLAIN, {"recipe_text": recipe, "error": error}),
            (EXPLAIN, {"recipe_text": recipe, "error": error["detail"]}),
        ],
    )
    assert ok1 and ok2
    assert from_object["valid"] is True  # the validator accepts it: only the run fails
    for answer in (from_object, from_message):
        explained = only(answer)
        assert explained["location"]["line"] == 2
        assert explained["fix"] == {
            "description": explained["fix"]["description"],
            "line": 2,
            "before": "  count: many",
            "after": "  count: 1",
        }
        assert "must be a number" in explained["rule"]
    fixed = recipe.replace("  count: many", explained["fix"]["after"])
    ok, run = call_tool(server, "snowfakery.run_recipe", {"recipe_text": fixed, "reps": 1})
    assert ok and run["summary"]["row_counts"] == {"Person": 1}


def test_workspace_recipe_error_in_an_included_file(env: tuple[FastMCP, Settings]) -> None:
    server, settings = env
    workspace = Path(settings.snowfakery.workspace_root)
    (workspace / "recipes").mkdir(parents=True, exist_ok=True)
    (workspace / "recipes" / "parts.yml").write_text(
        "- object: Account\n  fields:\n    name:\n      fake: Compny\n"
    )
    (workspace / "recipes" / "main.yml").write_text("- include_file: parts.yml\n- object: Contact\n")
    (ok, answer), (ok_valid, valid), (refused, outside) = call_tools(
        server,
        [
            (EXPLAIN, {"recipe_path": "recipes/main.yml"}),
            (EXPLAIN, {"recipe_text": "- object: Person\n  fields:\n    name: x\n"}),
            (EXPLAIN, {"recipe_path": "../outside.yml"}),
        ],
    )
    assert ok, answer
    assert answer["recipe"] == "recipes/main.yml"
    explained = only(answer)
    assert explained["location"]["filename"] == "recipes/parts.yml"
    assert explained["source_line"] == "    name:"
    assert explained["fix"]["after"] == "      fake: company"
    assert ok_valid and valid["valid"] is True and valid["explanations"] == []
    assert not refused and outside["error"] == "path_not_allowed"


def test_run_recipe_update_mode_reads_a_workspace_csv(env: tuple[FastMCP, Settings]) -> None:
    """run_recipe's update mode (CLI --update-input-file): one output row per input row, passthrough
    columns copied; an input file outside the workspace is refused like every other path."""
    server, settings = env
    workspace = Path(settings.snowfakery.workspace_root)
    (workspace / "data").mkdir(parents=True, exist_ok=True)
    (workspace / "data" / "people.csv").write_text("id,name,city\n7,Ann,Oslo\n9,Bob,Lima\n")
    (workspace.parent / "outside.csv").write_text("id,name\n1,Eve\n")
    recipe = "- object: Person\n  fields:\n    greeting: Hello ${{input.name}}\n"
    update = {"recipe_text": recipe, "update_input_file": "data/people.csv", "output_format": "json"}
    (ok, run), (ok_outside, outside), (ok_abs, absolute), (ok_out, out_path), (ok_reps, reps), (ok_pt, pt) = (
        call_tools(
            server,
            [
                ("snowfakery.run_recipe", {**update, "update_passthrough_fields": ["id"]}),
                ("snowfakery.run_recipe", {**update, "update_input_file": "../outside.csv"}),
                (
                    "snowfakery.run_recipe",
                    {**update, "update_input_file": str(workspace.parent / "outside.csv")},
                ),
                ("snowfakery.run_recipe", {"recipe_text": recipe, "output_file_path": "../x.json"}),
                ("snowfakery.run_recipe", {**update, "reps": 2}),
                ("snowfakery.run_recipe", {"recipe_text": recipe, "update_passthrough_fields": ["id"]}),
            ],
        )
    )
    assert ok, run
    assert run["update_input_file"] == "data/people.csv"
    assert run["summary"]["row_counts"] == {"Person": 2}
    rows = sorted(json.loads(run["stdout_text"]), key=lambda r: str(r["id"]))
    assert [(str(r["id"]), r["greeting"]) for r in rows] == [("7", "Hello Ann"), ("9", "Hello Bob")]
    assert all("city" not in r for r in rows)  # only the passthrough column is copied
    assert [w["kind"] for w in run["warnings"]] == ["UpdateModeWarning"]
    assert not ok_outside and not ok_abs and not ok_out
    assert outside["error"] == absolute["error"] == out_path["error"] == "path_not_allowed"
    assert str(workspace.parent) not in json.dumps([outside, absolute])
    assert not ok_reps and reps["error"] == "invalid_argument"
    assert not ok_pt and pt["error"] == "invalid_argument"
