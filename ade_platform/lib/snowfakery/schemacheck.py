"""JSON-schema checks of a recipe, reported with the line of the offending statement.

Findings are advice, not verdicts: the Snowfakery validator decides whether a recipe is valid (that is
what the CLI does), so the tools report schema findings as warnings.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from ade_platform.lib.snowfakery.analysis import _SafeLoader

_MAX_FINDINGS = 20
_VALIDATORS: dict[int, tuple[dict[str, Any], Any]] = {}


def schema_findings(text: str, schema: dict[str, Any], filename: str) -> list[dict[str, Any]]:
    validator = _validator(schema)
    if validator is None:  # pragma: no cover - jsonschema ships with the MCP SDK
        return []
    from jsonschema.exceptions import best_match

    # JSON's view of the data: YAML dates and timestamps are strings to a JSON schema (libyaml: the pure-Python
    # loader took most of this check's ~18 ms per call)
    data = json.loads(json.dumps(yaml.load(text, Loader=_SafeLoader), default=str))
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return []
    root = yaml.compose(text, Loader=_SafeLoader)  # lines, only for a recipe that has findings
    findings: list[dict[str, Any]] = []
    for error in errors[:_MAX_FINDINGS]:
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
    return findings


def _validator(schema: dict[str, Any]) -> Any:
    """The schema's validator, built once per schema object (building one resolves its whole $defs)."""
    cached = _VALIDATORS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    try:
        from jsonschema import validators
    except ImportError:  # pragma: no cover
        return None
    validator = validators.validator_for(schema)(schema)
    _VALIDATORS[id(schema)] = (schema, validator)
    return validator


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
