"""The snowflake and snowfakery tools publish typed output schemas with the specs' field names (issue 17).

Read from the committed surface snapshot, which test_tool_surface.py keeps equal to the live surface.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.contract.surface import SNAPSHOT

# tool -> fields the spec names, which the schema must declare
SPEC_FIELDS = {
    "execute_sql": {"_queryType", "_rowCount", "columns", "provenance"},
    "execute_scalar": {"_queryType", "_rowCount", "reclassified", "code", "message"},
    "list_objects": {"objects"},
    "describe_object": {"metadata"},
    "get_ddl": {"ddl", "source", "note"},
    "get_lineage": {"lineage", "nodes", "edges"},
    "get_dependencies": {"dependencies"},
    "sync_objects": {"synced", "results"},
    "check_staleness": {"isStale", "objectName"},
    "execute_ddl": {"success"},
    "snowfakery.list_capabilities": {"snowfakery_version", "output_formats", "limits"},
    "snowfakery.validate_recipe": {"valid", "errors", "warnings"},
    "snowfakery.analyze_recipe": {
        "tables",
        "relationships",
        "uses_random_reference",
        "options_declared",
        "plugins_declared",
        "estimated_risk",
    },
    "snowfakery.run_recipe": {"run_id", "summary", "stdout_text", "resources", "update_input_file"},
    "snowfakery.explain_errors": {"valid", "explanations"},
}
SNOWFLAKE = tuple(name for name in SPEC_FIELDS if not name.startswith("snowfakery."))  # the spec's ten


def _tools() -> dict[str, Any]:
    tools = json.loads(SNAPSHOT.read_text())["tools"]
    return {n: t for n, t in tools.items() if n in SNOWFLAKE or n.startswith("snowfakery.")}


@pytest.mark.parametrize("name", sorted(_tools()))
def test_output_schema_is_typed(name: str) -> None:
    schema = _tools()[name]["output_schema"]
    assert schema and schema.get("type") == "object"
    assert schema.get("properties"), f"{name} publishes an open object schema"
    assert schema.get("required"), f"{name} declares no field it always returns"
    assert SPEC_FIELDS.get(name, set()) <= set(schema["properties"]), name
    if name in SNOWFLAKE:
        assert "provenance" in schema["required"], name


def test_explain_errors_fix_shape_is_published() -> None:
    schema = _tools()["snowfakery.explain_errors"]["output_schema"]
    item = schema["properties"]["explanations"]["items"]
    assert {"failing_construct", "location", "rule", "fix"} <= set(item["required"])
    assert {"description", "line", "before", "after"} <= set(item["properties"]["fix"]["properties"])
