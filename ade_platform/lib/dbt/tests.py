"""The dbt tests that exercise a node, from the lineage index (no manifest re-parse)."""

from __future__ import annotations

from typing import Any


def generic_test_type(rec: dict[str, Any]) -> str:
    """`not_null`, `accepted_values`, `dbt_utils.expression_is_true`, ... or `singular`."""
    name = rec.get("test_name")
    if not name:
        return "singular"
    namespace = rec.get("test_namespace")
    return f"{namespace}.{name}" if namespace else name


def model_tests(index: dict[str, Any], node_id: str) -> list[dict[str, Any]]:
    """Every test whose depends_on includes node_id: generic and singular, including relationships tests
    defined on another model that point at this one. An empty list means the node is untested."""
    records = index["nodes"]
    model_name = (records.get(node_id) or {}).get("name")
    out = []
    for test_id in sorted(index["tests_by_node"].get(node_id, ())):
        rec = records.get(test_id) or {}
        attached = rec.get("attached_node")
        out.append(
            {
                "test_id": test_id,
                "test_name": rec.get("name"),
                "test_type": generic_test_type(rec),
                "test_kind": rec.get("test_type") or "singular",
                "column_name": rec.get("column_name"),
                "model_name": model_name,
                "attached_node": attached,
                "defined_on_other_node": bool(attached) and attached != node_id,
                "severity": rec.get("severity") or "error",
                "config": {**(rec.get("kwargs") or {}), **(rec.get("test_config") or {})},
                "tags": rec.get("tags") or [],
            }
        )
    return out
