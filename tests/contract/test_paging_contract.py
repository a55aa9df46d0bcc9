"""One paging contract for every tool that returns a list (docs/PAGING.md), checked on the published surface.

A tool whose answer holds a list of records under a key takes `limit` and `cursor` and answers `next_cursor`
and `truncated`, unless it is exempt below, with the reason. The filters share their names and schemas.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.contract.surface import current_surface

# Tools whose lists are bounded by what they are about, not by the size of the data stack. Keep it short.
EXEMPT: dict[str, tuple[str, ...]] = {
    # the parts of one object: a model's or table's columns, one run's steps, one column's sources, one
    # dashboard's tiles run live as a whole (a second page would run every tile again)
    "one object's parts": (
        "dbt_get_schema",
        "dbt_get_column_lineage",
        "describe_object",
        "warehouse_detect_schema_drift",
        "dbtcloud_poll_run",
        "bi_check_dashboard_health",
        "bi_verify_row_counts",
        # one incident: its symptoms (at most 200) and timeline (at most 100 entries) are bounded by the model
        "incident_get",
        "incident_update",
    ),
    # one entry per pattern the caller passed (at most 200 / 100), or a fixed sample (5 duplicate keys)
    "the caller's own input": (
        "dbt_detect_silent_skip",
        "orchestrator_detect_patterns",
        "warehouse_detect_duplicates",
    ),
    # a query's rows: bounded by the tool's own row limit (limits.max_rows, guardrail.maxScalarRows,
    # bi.max_rows); a page at an offset would run the query again
    "a query's result set": ("execute_sql", "execute_scalar", "warehouse_execute", "bi_run_look"),
    # the report of one recipe or one sync the caller asked for, bounded by that recipe or sync
    "one recipe's or one call's report": (
        "snowfakery.analyze_recipe",
        "snowfakery.validate_recipe",
        "snowfakery.explain_errors",
        "snowfakery.run_recipe",
        "snowfakery.draft_recipe",  # its rounds: one drafting call's attempts, at most its max_rounds
        "sync_objects",
    ),
    # a live diagnosis: each call probes again, so there is no stable list to page; ranked, capped causes
    "a live diagnosis": ("lineage_explain_incident",),
}
EXEMPT_TOOLS = {tool for tools in EXEMPT.values() for tool in tools}
FILTERS = ("name_pattern", "since", "until")


@pytest.fixture(scope="module")
def tools() -> dict[str, Any]:
    return current_surface()["tools"]


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return root.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {}) if ref else schema


def record_lists(output: dict[str, Any]) -> list[str]:
    """The keys of the answer that hold a list of records (objects); lists of names or notes are not."""
    found = []
    for key, prop in (output.get("properties") or {}).items():
        prop = _resolve(prop, output)
        for alt in [prop, *(_resolve(a, output) for a in prop.get("anyOf", []))]:
            items = _resolve(alt.get("items") or {}, output)
            if alt.get("type") == "array" and (items.get("type") == "object" or "properties" in items):
                found.append(key)
                break
    return found


def is_paged(tool: dict[str, Any]) -> bool:
    inputs = tool["input_schema"].get("properties") or {}
    outputs = tool["output_schema"].get("properties") or {}
    return {"limit", "cursor"} <= set(inputs) and {"next_cursor", "truncated"} <= set(outputs)


def test_every_tool_that_returns_a_list_pages_it(tools: dict[str, Any]) -> None:
    unpaged = {
        name: keys
        for name, tool in tools.items()
        if (keys := record_lists(tool["output_schema"] or {}))
        and not is_paged(tool)
        and name not in EXEMPT_TOOLS
    }
    assert not unpaged, f"list tools without limit/cursor -> next_cursor/truncated: {unpaged}"


def test_the_contract_covers_all_nine_toolsets(tools: dict[str, Any]) -> None:
    paged = {name for name, tool in tools.items() if is_paged(tool)}
    assert len(paged) >= 23, sorted(paged)
    for example in (
        "dbt_get_model_tests",  # dbt-artifacts
        "fs_list_models",  # dbt-project
        "warehouse_get_query_history",  # warehouse
        "dbtcloud_list_jobs",  # dbt-cloud
        "orchestrator_get_run_history",  # orchestrator
        "bi_list_dashboards",  # bi-api
        "list_objects",  # snowflake
        "snowfakery.list_examples",  # snowfakery
        "lineage_trace",  # lineage
    ):
        assert example in paged, example


def test_exemptions_name_existing_list_tools_that_are_not_paged(tools: dict[str, Any]) -> None:
    for tool in EXEMPT_TOOLS:
        assert tool in tools, f"exempt tool {tool} is gone: drop it from EXEMPT"
        assert record_lists(tools[tool]["output_schema"]), f"{tool} returns no list: drop it from EXEMPT"
        assert not is_paged(tools[tool]), f"{tool} pages now: drop it from EXEMPT"


def test_paged_tools_share_the_parameter_schemas_and_point_to_the_contract(tools: dict[str, Any]) -> None:
    paged = {name: tool for name, tool in tools.items() if is_paged(tool)}
    cursors = {name: tool["input_schema"]["properties"]["cursor"] for name, tool in paged.items()}
    assert len({repr(c) for c in cursors.values()}) == 1, cursors
    for name, tool in paged.items():
        limit = tool["input_schema"]["properties"]["limit"]
        kinds = [limit, *limit.get("anyOf", [])]
        assert any(
            k.get("type") in ("integer", ["integer", "null"]) and k.get("minimum") == 1 for k in kinds
        ), (
            name,
            limit,
        )
        # the gateway's instructions say once how paging works (docs/PAGING.md); a tool's description says it pages
        assert "paged" in (tool["description"] or "").lower(), (
            f"{name}: say in its description that it is paged"
        )
        outputs = tool["output_schema"]["properties"]
        assert "next_cursor" in outputs and outputs["truncated"].get("type") == "boolean", name
    for name in FILTERS:
        schemas = {
            tool: spec["input_schema"]["properties"][name]
            for tool, spec in tools.items()
            if name in spec["input_schema"].get("properties", {})
        }
        assert schemas, f"no tool filters by {name}"
        kinds = {repr(_value_type(s)) for s in schemas.values()}
        assert len(kinds) == 1, f"{name} differs between tools: {schemas}"


def _value_type(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's type and bounds without null, default and description (lineage_what_changed's `since`
    defaults to 7d, the other tools' to no bound)."""
    kinds = [k for k in schema.get("anyOf", [schema]) if k.get("type") != "null"]
    kind = {k: v for k, v in kinds[0].items() if k not in ("default", "description")}
    if isinstance(kind.get("type"), list):  # published as {"type": [X, "null"]} (mcp_bridge/schema_form.py)
        kind["type"] = next(t for t in kind["type"] if t != "null")
    return kind


def test_no_tool_names_paging_another_way(tools: dict[str, Any]) -> None:
    other = {"page", "page_size", "page_token", "offset", "next_page_token", "per_page", "after"}
    for name, tool in tools.items():
        clash = other & set(tool["input_schema"].get("properties") or {})
        assert not clash, f"{name} pages with {clash}: use limit and cursor (docs/PAGING.md)"
