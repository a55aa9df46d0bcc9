"""JSON-schema checks of a recipe, reported with the line of the offending statement.

Findings are advice, not verdicts: the Snowfakery validator decides whether a recipe is valid (that is
what the CLI does), so the tools report schema findings as warnings.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

_MAX_FINDINGS = 20


def schema_findings(text: str, schema: dict[str, Any], filename: str) -> list[dict[str, Any]]:
    try:
        from jsonschema import validators
        from jsonschema.exceptions import best_match
    except ImportError:  # pragma: no cover - jsonschema ships with the MCP SDK
        return []
    # JSON's view of the data: YAML dates and timestamps are strings to a JSON schema
    data = json.loads(json.dumps(yaml.safe_load(text), default=str))
    root = yaml.compose(text)
    validator_class = validators.validator_for(schema)
    validator = validator_class(schema)
    findings: list[dict[str, Any]] = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path))):
        specific = best_match(error.context) if error.context else error
        path = list(specific.absolute_path)
        findings.append(
            {
                "kind": "SchemaWarning",
                "message": f"{_where(path)}: {specific.message[:300]}",
                "filename": filename,
                "line": _line(root, path),
            }
        )
        if len(findings) >= _MAX_FINDINGS:
            break
    return findings


def _where(path: list[Any]) -> str:
    return "/".join(str(p) for p in path) or "(recipe)"


def _line(node: yaml.Node | None, path: list[Any]) -> int | None:
    """The 1-based line of the node at `path` (or of the deepest node found on the way)."""
    if node is None:
        return None
    line = node.start_mark.line + 1
    for step in path:
        if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
            node = node.value[step]
        elif isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == str(step)), None)
            if match is None:
                break
            node = match
        else:
            break
        line = node.start_mark.line + 1
    return line
