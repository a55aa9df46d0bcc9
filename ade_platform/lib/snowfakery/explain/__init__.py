"""Explain recipe errors: the failing construct, the rule it breaks and the smallest edit that fixes it.

Works from what the parser already said (each error's kind, message, filename and line, as Snowfakery's
exceptions and the YAML parser carry them), the recipe's own text and declarations (objects, nicknames,
options, fields) and the recipe JSON schema (which keys a statement allows). No model is involved: every
rule matches one family of Snowfakery or YAML messages, and the suggested edit is derived from the message
(Snowfakery's own "Did you mean ...?"), the closest declared name, or the YAML around the line.

This façade names the public functions; the rules sit behind it (README.md beside this file): `_rules.py`
for Snowfakery's messages, `_yaml.py` for YAML syntax errors, `_findings.py` for what every rule shares.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ade_platform.lib.snowfakery.explain._findings import Finding, RecipeFacts, line_text
from ade_platform.lib.snowfakery.explain._rules import RULES, refused_plugin
from ade_platform.lib.snowfakery.explain._yaml import yaml_rule

__all__ = ["LineReader", "RecipeFacts", "explain", "facts_from", "standard_plugins"]

_AT_LOCATION = re.compile(r"\((?P<file>[^()]*):(?P<line>\d+)\)\s*$")
_VAR = re.compile(r"^\s*-\s+var:\s*([A-Za-z_]\w*)", re.M)

LineReader = Callable[[str | None], list[str] | None]


def facts_from(analysis: dict[str, Any], schema: dict[str, Any], text: str) -> RecipeFacts:
    """RecipeFacts from `analysis.analyze()`'s model, the recipe text and the recipe JSON schema."""
    tables = [str(t["name"]) for t in analysis.get("tables", [])]
    nicknames = [n for t in analysis.get("tables", []) for n in t.get("nicknames", [])]
    fields_ = [str(f["name"]) for t in analysis.get("tables", []) for f in t.get("fields", [])]
    options = [str(o["name"]) for o in analysis.get("options_declared", [])]
    definitions = schema.get("definitions") or schema.get("$defs") or {}
    properties = {
        name: list((definitions.get(name) or {}).get("properties", {}))
        for name in ("object", "var", "option", "macro", "plugin", "include_file")
    }
    return RecipeFacts(
        tables=tables,
        nicknames=nicknames,
        options=options,
        fields=list(dict.fromkeys(fields_)),
        variables=_VAR.findall(text),
        statement_properties=properties,
        plugins=standard_plugins(),
    )


def standard_plugins() -> list[str]:
    """Dotted names of Snowfakery's standard plugins, read from the installed package's sources (nothing is
    imported: plugin modules pull in network clients)."""
    spec = importlib.util.find_spec("snowfakery")
    if spec is None or not spec.submodule_search_locations:
        return []
    folder = Path(next(iter(spec.submodule_search_locations))) / "standard_plugins"
    init = (folder / "__init__.py").read_text(encoding="utf-8", errors="replace")
    # classes the package re-exports (`from ._math import Math`) are named from the package
    found = [f"snowfakery.standard_plugins.{n}" for n in re.findall(r"from \.\w+ import (\w+)", init)]
    pattern = re.compile(r"^class (\w+)\((?:[\w.]+, )*(?:SnowfakeryPlugin|DatasetPluginBase)\b", re.M)
    for path in sorted(folder.glob("*.py")):
        if path.stem.startswith("_"):
            continue
        for name in pattern.findall(path.read_text(encoding="utf-8", errors="replace")):
            if name.endswith("Base"):
                continue
            # a module named like its class (Counters, Schedule, ...) is loaded by the module's name
            module = "" if path.stem == name else f"{path.stem}."
            found.append(f"snowfakery.standard_plugins.{module}{name}")
    return found


def explain(problem: dict[str, Any], read_lines: LineReader, facts: RecipeFacts) -> dict[str, Any]:
    """One error (kind, message, filename, line[, column]) -> {kind, message, location, construct, rule,
    fix {description, line, before, after}, source_line}."""
    kind = str(problem.get("kind") or "Error")
    message = str(problem.get("message") or "")
    filename = problem.get("filename")
    line = problem.get("line") if isinstance(problem.get("line"), int) else None
    if line is None and (at := _AT_LOCATION.search(message)):
        line = int(at.group("line"))
        filename = filename or at.group("file")
        message = message[: at.start()].rstrip()
    lines = read_lines(filename) or []
    column = problem.get("column") if isinstance(problem.get("column"), int) else None
    finding = _rule_for(kind, message, lines, line, column, facts)
    fix_line = finding.line if finding.line is not None else line
    location: dict[str, Any] = {"filename": filename, "line": line}
    if column is not None:
        location["column"] = column
    return {
        "kind": kind,
        "message": _clean_message(message),
        "location": location,
        "failing_construct": finding.construct,
        "rule": finding.rule,
        "fix": {
            "description": finding.description,
            "line": fix_line if finding.before is not None else None,
            "before": finding.before,
            "after": finding.after,
        },
        "source_line": line_text(lines, line),
    }


def _clean_message(message: str) -> str:
    # Snowfakery's "Unknown object type" message prints the statement's internals (line trackers)
    if message.startswith("Unknown object type"):
        return "Unknown object type: the statement has no `object` (or other statement) key"
    return message


def _rule_for(
    kind: str, message: str, lines: list[str], line: int | None, column: int | None, facts: RecipeFacts
) -> Finding:
    if kind == "YamlSyntaxError":
        return yaml_rule(message, lines, line, column)
    for pattern, handler in RULES:
        match = pattern.search(message)
        if match:
            return handler(match, lines, line, facts)
    if kind in ("PluginNotAllowed", "SalesforceOrgRequired"):
        return refused_plugin(kind, lines, line)
    return Finding(
        construct=line_text(lines, line),
        rule="Snowfakery rejected this construct (see message)",
        description="edit the construct at this line as the message says, then validate again",
    )
