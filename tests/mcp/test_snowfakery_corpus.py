"""Snowfakery's own example recipes (../shared/corpus/snowfakery, read in place) through the MCP protocol.

validate_recipe gives every recipe the CLI's verdict (`examples_status.csv`: `snowfakery --validate-only`
run in the recipe's folder); recipes the CLI could not check because they need a Salesforce org are
refused with SalesforceOrgRequired. Valid recipes then run once (reps: 1). The workspace root is the
corpus itself (nothing is written there: run folders live in a temporary directory) and the docs
directory is the corpus too, so upstream docs, schema and examples are served.
"""

from __future__ import annotations

import asyncio
import csv
import json
import os
import re
from typing import Any

import pytest
import yaml
from fastmcp import Client, FastMCP

from ade_platform.config import Settings, load_settings
from mcp_bridge.server import build_server
from tests.conftest import CORPUS
from tests.helpers import call_tool, call_tools

SNOWFAKERY = CORPUS / "snowfakery"
STATUS = SNOWFAKERY / "examples_status.csv"
# Valid for the CLI's validator, but they fail when they run, with the CLI as well (checked with
# snowfakery 4.2.1): the validator cannot see these problems. The stress test is meant to be huge (100M
# rows of ~80 MB strings); the output cap stops it.
RUNTIME_FAILURES = {
    "counters/simple_date_counter.recipe.yml": "run_failed",
    "docs_examples/nested_counter.yml": "recipe_invalid",
    "unique_id/hidden_obj.recipe.yml": "recipe_invalid",
    "random-reference-stress-test.yml": "limit_exceeded",
}


def _rows() -> list[dict[str, str]]:
    if not STATUS.is_file():
        return []
    with STATUS.open(newline="") as handle:
        return list(csv.DictReader(handle))


ROWS = _rows()
PARAMS = [pytest.param(r, id=r["recipe"]) for r in ROWS] or [pytest.param(None, id="no-corpus")]
VALID = [pytest.param(r, id=r["recipe"]) for r in ROWS if r["status"] == "pass"] or [
    pytest.param(None, id="no-corpus")
]


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory: pytest.TempPathFactory) -> FastMCP:
    if not SNOWFAKERY.is_dir():
        pytest.skip("../shared/corpus/snowfakery is not present (CI has it)")
    root = tmp_path_factory.mktemp("snowfakery-corpus")
    (root / "dagster").mkdir()
    (root / "dagster" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    config = {
        "home": str(root / "home"),
        # ~200 sandbox calls from one (local) caller: more than the per-user heavy-call limit allows a minute
        "mcp": {"toolsets": ["snowfakery"], "access": {"limits": {"heavy_calls_per_minute": None}}},
        "snowfakery": {
            "workspace_root": str(SNOWFAKERY),
            "runs_dir": str(root / "runs"),
            "docs_dir": str(SNOWFAKERY),
            "timeout_seconds": 20,
            "max_output_bytes": 20_000_000,
        },
    }
    (root / "ade.yaml").write_text(yaml.safe_dump(config))
    settings: Settings = load_settings(root / "ade.yaml", env={})
    previous = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(root / "dagster")
    yield build_server(settings, only="snowfakery")
    if previous is None:
        os.environ.pop("DAGSTER_HOME", None)
    else:
        os.environ["DAGSTER_HOME"] = previous


def _core(first_line: str) -> str:
    """The CLI's first error line without its decorations: 'Error: ', '1. ', the resolved path."""
    text = re.sub(r"^(Error: |\d+\. )", "", first_line.strip())
    return text.split(" (resolved to")[0]


@pytest.mark.parametrize("row", PARAMS)
def test_validate_verdict_matches_the_cli(corpus_server: FastMCP, row: dict[str, str] | None) -> None:
    assert row is not None
    ok, verdict = call_tool(
        corpus_server, "snowfakery.validate_recipe", {"recipe_path": f"examples/{row['recipe']}"}
    )
    assert ok, verdict
    if row["status"] == "pass":
        assert verdict["valid"], verdict["errors"]
        return
    assert not verdict["valid"]
    first = verdict["errors"][0]
    assert first["message"] and first["kind"] and first["filename"]
    assert str(SNOWFAKERY) not in json.dumps(verdict)  # paths are shown relative to the workspace
    if row["status"] == "skipped":  # needs a Salesforce org: refused, with the declaration's line
        assert first["kind"] == "SalesforceOrgRequired" and first["line"]
    elif row["error_first_line"].startswith("Error: Cannot find plugin: "):
        # a plugin the server does not know is refused before Snowfakery looks for it
        plugin = row["error_first_line"].rsplit(" ", 1)[-1]
        assert first["kind"] == "PluginNotAllowed" and plugin in first["message"] and first["line"]
    else:
        core = _core(row["error_first_line"])
        assert any(core in e["message"] for e in verdict["errors"]), (core, verdict["errors"])


@pytest.mark.parametrize("row", VALID)
def test_valid_recipes_run_once(corpus_server: FastMCP, row: dict[str, str] | None) -> None:
    assert row is not None
    ok, answer = call_tool(
        corpus_server, "snowfakery.run_recipe", {"recipe_path": f"examples/{row['recipe']}", "reps": 1}
    )
    expected_failure = RUNTIME_FAILURES.get(row["recipe"])
    if expected_failure:
        assert not ok and answer["error"] == expected_failure, answer
        return
    assert ok, answer
    assert answer["provenance"]["source"] == "live"
    assert answer["summary"]["reps"] == 1
    assert answer["resources"][0].endswith("/recipe")


def test_upstream_docs_schema_and_examples_are_served(corpus_server: FastMCP) -> None:
    (ok1, caps), (ok2, listing), (ok3, schema), (ok4, search), (ok5, example) = call_tools(
        corpus_server,
        [
            ("snowfakery.list_capabilities", {}),
            ("snowfakery.list_examples", {"prefix": "datasets/"}),
            ("snowfakery.get_schema", {}),
            ("snowfakery.search_docs", {"query": "random_reference unique", "limit": 3}),
            ("snowfakery.get_example", {"name": "docs_examples/st_ives"}),
        ],
    )
    assert ok1 and caps["content"] == {"docs": "docs_dir", "examples": "docs_dir", "schema": "docs_dir"}
    assert ok2 and "datasets/simple_for_each" in [e["name"] for e in listing["examples"]]
    assert ok3 and schema["schema"]["title"] == "Snowfakery Recipe" and schema["source"] == "docs_dir"
    assert ok4 and search["results"][0]["doc"] == "docs/index.md"
    assert "random" in search["results"][0]["heading"].lower()
    assert ok5 and example["provenance"]["path"] == "examples/docs_examples/st_ives.yml"

    async def read() -> list[Any]:
        async with Client(corpus_server) as client:
            return [
                await client.read_resource("snowfakery://docs/architecture"),
                await client.read_resource("snowfakery://docs/arch/RowHistory"),
                await client.read_resource("snowfakery://examples/company"),
            ]

    architecture, row_history, company = asyncio.run(read())
    assert architecture[0].text.startswith("#") and "RowHistory" in row_history[0].text
    assert "object:" in company[0].text


def test_upstream_update_recipe_runs_in_update_mode_and_is_explained(corpus_server: FastMCP) -> None:
    """Snowfakery's own update recipe fails validation on its own (`input` is undefined): explain_errors
    says to run it in update mode, and update mode over the upstream addresses CSV fills it row by row."""
    recipe = "examples/updates/update_contacts.recipe.yml"
    addresses = SNOWFAKERY / "examples" / "datasets" / "addresses.csv"
    with addresses.open(newline="") as handle:
        expected = {row["Oid"]: row for row in csv.DictReader(handle)}
    (ok1, explained), (ok2, run) = call_tools(
        corpus_server,
        [
            ("snowfakery.explain_errors", {"recipe_path": recipe}),
            (
                "snowfakery.run_recipe",
                {
                    "recipe_path": recipe,
                    "update_input_file": "examples/datasets/addresses.csv",
                    "update_passthrough_fields": ["Oid"],
                    "output_format": "json",
                },
            ),
        ],
    )
    assert ok1 and explained["valid"] is False
    first = explained["explanations"][0]
    assert first["location"] == {"filename": recipe, "line": 8}
    assert "update mode" in first["rule"] and "update_input_file" in first["fix"]["description"]
    assert ok2, run
    assert run["summary"]["row_counts"] == {"Contact": len(expected)}
    rows = json.loads(run["stdout_text"])
    assert {r["Oid"]: r["BillingCity"] for r in rows} == {k: v["City"] for k, v in expected.items()}
