"""Static analysis of a recipe: what it will generate, read from its YAML without running anything.

Tables and fields (macros applied), relationships (reference, random_reference, inline objects, friends,
`reference()` in formulas), options, plugins (checked against the run policy), includes (followed inside
the workspace only) and risk flags (very large or multiplying counts, dynamic counts, datasets of unknown
size, org-only features). Every finding carries the file and line it comes from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ade_platform.lib.snowfakery.policy import ORG_FUNCTIONS, RunPolicy

LINE = "__line__"
KEYLINES = "__keylines__"
META = (LINE, KEYLINES)
VERY_LARGE = 1_000_000
_JINJA_REF = re.compile(r"\b(random_reference|reference)\(\s*['\"]?([A-Za-z_][\w]*)")
_MAX_BOUND = re.compile(r"\bmax\s*=\s*(\d+)")
_ORG_CALL = re.compile(r"\bSalesforce\.ProfileId\b")


# libyaml's parser when PyYAML has it (ten times faster: every run analyses its recipe first); same nodes, marks
# and safe constructors either way.
_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _LineLoader(_SafeLoader):
    """SafeLoader recording the 1-based line of every mapping (`__line__`) and of each key (`__keylines__`)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=deep)
        mapping[LINE] = node.start_mark.line + 1
        mapping[KEYLINES] = {
            key.value: key.start_mark.line + 1 for key, _ in node.value if isinstance(key, yaml.ScalarNode)
        }
        return mapping


def load_with_lines(text: str) -> Any:
    return yaml.load(text, Loader=_LineLoader)  # a SafeLoader subclass: no arbitrary objects


def yaml_error(text: str, filename: str) -> dict[str, Any] | None:
    try:
        yaml.load(text, Loader=_SafeLoader)
        return None
    except yaml.YAMLError:
        pass  # explained below by the pure-Python parser, whose messages and positions agents are shown
    try:
        yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        return {
            "kind": "YamlSyntaxError",
            "message": str(exc.problem or exc),
            "filename": filename,
            "line": mark.line + 1 if mark else None,
            "column": mark.column + 1 if mark else None,
        }
    except yaml.YAMLError as exc:
        return {"kind": "YamlSyntaxError", "message": str(exc), "filename": filename, "line": None}
    return None


@dataclass
class _State:
    policy: RunPolicy
    root: Path
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    nicknames: dict[str, str] = field(default_factory=dict)
    relationships: list[dict[str, Any]] = field(default_factory=list)
    options: list[dict[str, Any]] = field(default_factory=list)
    plugins: list[dict[str, Any]] = field(default_factory=list)
    macros: dict[str, dict[str, Any]] = field(default_factory=dict)
    includes: list[dict[str, Any]] = field(default_factory=list)
    risks: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    version: Any = None
    seen_files: set[Path] = field(default_factory=set)

    def risk(self, flag: str, severity: str, message: str, where: tuple[str, int | None]) -> None:
        self.risks.append(
            {"flag": flag, "severity": severity, "message": message, "filename": where[0], "line": where[1]}
        )


def analyze(text: str, filename: str, base_dir: Path, root: Path, policy: RunPolicy) -> dict[str, Any]:
    """The explainable model of a recipe (see module docstring). `filename` is the display name."""
    problem = yaml_error(text, filename)
    if problem:
        return {"valid_yaml": False, "errors": [problem]}
    state = _State(policy=policy, root=root.resolve())
    data = load_with_lines(text) or []
    if not isinstance(data, list):
        return {
            "valid_yaml": True,
            "errors": [
                {
                    "kind": "DataGenSyntaxError",
                    "message": "a recipe is a list of statements",
                    "filename": filename,
                    "line": 1,
                }
            ],
        }
    _collect_declarations(data, filename, base_dir, state)
    for statement in data:
        if isinstance(statement, dict):
            _statement(statement, filename, state, parent=None, multiplier=1)
    _macro_problems(state)
    for relation in state.relationships:
        target = relation["to_table"]
        if target in state.nicknames and target not in state.tables:
            relation["to_table"], relation["nickname"] = state.nicknames[target], target
    if not state.tables:
        state.risk(
            "no_objects", "info", "the recipe declares no object, so a run writes nothing", (filename, None)
        )
    if state.version is None:
        state.risk(
            "no_version",
            "info",
            "add `- snowfakery_version: 3` to use the current formula language",
            (filename, None),
        )
    referenced = sorted({r["to_table"] for r in state.relationships if r["kind"] == "random_reference"})
    return {
        "valid_yaml": True,
        "errors": [],
        "snowfakery_version": state.version,
        "tables": [{"name": name, **info} for name, info in state.tables.items()],
        "relationships": state.relationships,
        "uses_random_reference": referenced,
        "options_declared": state.options,
        "plugins_declared": state.plugins,
        "macros": [
            {"name": n, "filename": m["filename"], "line": m["line"]} for n, m in state.macros.items()
        ],
        "includes": state.includes,
        "estimated_risk": state.risks,
        "policy_problems": state.problems,
    }


def _collect_declarations(data: list[Any], filename: str, base_dir: Path, state: _State) -> None:
    """Options, plugins, macros, version and includes (recursively, inside the workspace)."""
    for item in data:
        if not isinstance(item, dict):
            continue
        line = item.get(LINE)
        if "option" in item:
            default = item.get("default")
            state.options.append(
                {
                    "name": item["option"],
                    "default": default,
                    "required": default in (None, ""),
                    "filename": filename,
                    "line": line,
                }
            )
        elif "plugin" in item:
            name = str(item["plugin"])
            issue = state.policy.plugin_problem(name)
            state.plugins.append({"name": name, "allowed": issue is None, "filename": filename, "line": line})
            if issue:
                state.problems.append(
                    {"kind": issue[0], "message": issue[1], "filename": filename, "line": line}
                )
        elif "macro" in item:
            state.macros[str(item["macro"])] = {**item, "filename": filename, "line": line}
        elif "snowfakery_version" in item:
            state.version = item["snowfakery_version"]
        elif "include_file" in item:
            _include(str(item["include_file"]), filename, line, base_dir, state)


def _include(relative: str, filename: str, line: int | None, base_dir: Path, state: _State) -> None:
    target = (base_dir / relative).resolve()
    entry: dict[str, Any] = {"path": relative, "filename": filename, "line": line, "followed": False}
    state.includes.append(entry)
    if not (target == state.root or state.root in target.parents):
        message = f"include_file {relative} is outside the workspace"
        state.risk("include_outside_workspace", "error", message, (filename, line))
        state.problems.append(
            {"kind": "PathNotAllowed", "message": message, "filename": filename, "line": line}
        )
        return
    if target in state.seen_files:
        state.risk("include_cycle", "warning", f"{relative} is included more than once", (filename, line))
        return
    if not target.is_file():
        state.risk("include_missing", "error", f"include_file {relative} does not exist", (filename, line))
        return
    state.seen_files.add(target)
    text = target.read_text(encoding="utf-8")
    shown = target.relative_to(state.root).as_posix()
    if yaml_error(text, shown):
        state.risk("include_invalid", "error", f"{relative} is not valid YAML", (filename, line))
        return
    data = load_with_lines(text) or []
    if isinstance(data, list):
        entry["followed"] = True
        _collect_declarations(data, shown, target.parent, state)
        for statement in data:
            if isinstance(statement, dict):
                _statement(statement, shown, state, parent=None, multiplier=1)


def _statement(
    item: dict[str, Any], filename: str, state: _State, parent: str | None, multiplier: int
) -> None:
    if "object" in item or "table" in item:
        _object(item, filename, state, parent, multiplier)
    elif "var" in item:
        _value("(var)", item.get("value"), filename, item.get(LINE), state, parent, multiplier, table=parent)


def _object(item: dict[str, Any], filename: str, state: _State, parent: str | None, multiplier: int) -> None:
    name = str(item.get("object", item.get("table")))
    line = item.get(LINE)
    where = (filename, line)
    info = state.tables.setdefault(
        name,
        {
            "fields": [],
            "hidden": name.startswith("__"),
            "nicknames": [],
            "count": None,
            "just_once": False,
            "parents": [],
            "templates": 0,
            "filename": filename,
            "line": line,
        },
    )
    info["templates"] += 1
    if item.get("nickname"):
        info["nicknames"].append(str(item["nickname"]))
        state.nicknames[str(item["nickname"])] = name
    if item.get("just_once"):
        info["just_once"] = True
    if parent and parent not in info["parents"]:
        info["parents"].append(parent)
        state.relationships.append(
            {
                "from_table": parent,
                "field": None,
                "to_table": name,
                "kind": "friend",
                "filename": filename,
                "line": line,
            }
        )
    count = item.get("count", 1)
    info["count"] = count if info["templates"] == 1 else "varies"
    bound = _count_bound(count, where, state)
    total = multiplier * (bound or 1)
    if bound is not None and total > min(VERY_LARGE, state.policy.max_rows):
        state.risk("very_high_count", "warning", f"{name}: about {total:,} rows per repetition", where)
    elif bound is not None and multiplier > 1 and total > 10_000:
        state.risk(
            "multiplying_counts", "info", f"{name}: nested counts multiply to about {total:,} rows", where
        )
    if isinstance(item.get("for_each"), dict):
        for_each = item["for_each"]
        value = for_each.get("value")
        if isinstance(value, dict) and any(str(k).startswith(("Dataset.", "SOQLDataset.")) for k in value):
            state.risk(
                "dataset_sized",
                "info",
                f"{name}: one row per dataset row; the dataset's size sets the volume",
                where,
            )
        _value("(for_each)", value, filename, for_each.get(LINE), state, name, total, table=name)
    fields = dict(item.get("fields") or {})
    keylines = fields.get(KEYLINES) or {}
    for macro_name in _includes_of(item):
        if macro_name not in state.macros:
            state.risk("unknown_macro", "error", f"{name} includes unknown macro {macro_name}", where)
        elif macro_name not in info.setdefault("macros", []):
            info["macros"].append(macro_name)
        fields = {**_macro_fields(macro_name, state, set()), **fields}
    for field_name, value in fields.items():
        if field_name in META:
            continue
        field_line = keylines.get(field_name, line)
        if field_name not in [f["name"] for f in info["fields"]]:
            info["fields"].append(
                {"name": field_name, "kind": _kind(value), "hidden": str(field_name).startswith("__")}
            )
        _value(field_name, value, filename, field_line, state, name, total, table=name)
    for friend in item.get("friends") or []:
        if isinstance(friend, dict):
            _statement(friend, filename, state, parent=name, multiplier=total)
    for macro_name in _includes_of(item):
        macro = state.macros.get(macro_name)
        for friend in (macro or {}).get("friends") or []:
            if isinstance(friend, dict):
                _statement(friend, macro["filename"], state, parent=name, multiplier=total)


def _includes_of(item: dict[str, Any]) -> list[str]:
    raw = item.get("include")
    if isinstance(raw, str):
        return [part.strip() for part in raw.split(",") if part.strip()]
    if isinstance(raw, list):
        return [str(part) for part in raw]
    return []


def _macro_fields(name: str, state: _State, seen: set[str]) -> dict[str, Any]:
    macro = state.macros.get(name)
    if macro is None or name in seen:
        return {}
    fields: dict[str, Any] = {}
    for inner in _includes_of(macro):
        fields.update(_macro_fields(inner, state, seen | {name}))
    fields.update({k: v for k, v in (macro.get("fields") or {}).items() if k not in META})
    return fields


def _macro_problems(state: _State) -> None:
    known = set(state.macros)
    for macro in state.macros.values():
        for inner in _includes_of(macro):
            if inner not in known:
                state.risk(
                    "unknown_macro",
                    "error",
                    f"macro {macro.get('macro')} includes unknown macro {inner}",
                    (macro["filename"], macro["line"]),
                )


def _count_bound(count: Any, where: tuple[str, int | None], state: _State) -> int | None:
    if isinstance(count, bool):
        return None
    if isinstance(count, int | float):
        return int(count)
    if isinstance(count, str):
        text = count.strip()
        if text.isdigit():
            return int(text)
        option_names = {o["name"] for o in state.options}
        used = sorted(n for n in option_names if re.search(rf"\b{re.escape(n)}\b", text))
        if used:
            state.risk("count_from_option", "info", f"count depends on option(s) {', '.join(used)}", where)
        else:
            state.risk("dynamic_count", "info", f"count is computed at run time: {text[:80]}", where)
        match = _MAX_BOUND.search(text)
        return int(match.group(1)) if match else None
    if isinstance(count, dict):
        bound = _MAX_BOUND.search(str(count))
        state.risk("dynamic_count", "info", "count is computed at run time", where)
        return int(bound.group(1)) if bound else None
    return None


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        keys = [k for k in value if k not in META]
        if "object" in keys or "table" in keys:
            return "object"
        return str(keys[0]) if keys else "mapping"
    if isinstance(value, str) and "${{" in value:
        return "formula"
    if isinstance(value, list):
        return "list"
    return "literal"


def _value(
    field_name: str,
    value: Any,
    filename: str,
    line: int | None,
    state: _State,
    owner: str | None,
    multiplier: int,
    table: str | None,
) -> None:
    """Relationships and org-only functions inside a field value (recursively)."""
    if isinstance(value, str):
        for kind, target in _JINJA_REF.findall(value):
            _relate(table, field_name, target, kind, filename, line, state)
        if _ORG_CALL.search(value):
            _org_problem("Salesforce.ProfileId", filename, line, state)
        return
    if isinstance(value, list):
        for item in value:
            _value(field_name, item, filename, line, state, owner, multiplier, table)
        return
    if not isinstance(value, dict):
        return
    line = value.get(LINE, line)
    if "object" in value or "table" in value:
        child = str(value.get("object", value.get("table")))
        _relate(table, field_name, child, "inline_object", filename, line, state)
        _object(value, filename, state, parent=None, multiplier=multiplier)
        return
    for key, arg in value.items():
        if key in META:
            continue
        if key in ("reference", "random_reference"):
            target = arg.get("to") if isinstance(arg, dict) else arg
            if isinstance(target, str) and "${{" not in target:
                _relate(table, field_name, target, key, filename, line, state)
        if key in ORG_FUNCTIONS:
            _org_problem(key, filename, line, state)
        _value(field_name, arg, filename, line, state, owner, multiplier, table)


def _relate(
    table: str | None, field_name: str, target: str, kind: str, filename: str, line: int | None, state: _State
) -> None:
    if table is None:
        return
    entry = {
        "from_table": table,
        "field": field_name,
        "to_table": target,
        "kind": kind,
        "filename": filename,
        "line": line,
    }
    if entry not in state.relationships:
        state.relationships.append(entry)


def _org_problem(name: str, filename: str, line: int | None, state: _State) -> None:
    issue = state.policy.function_problem(name)
    if issue:
        problem = {"kind": issue[0], "message": issue[1], "filename": filename, "line": line}
        if problem not in state.problems:
            state.problems.append(problem)


def table_names(analysis: dict[str, Any]) -> list[str]:
    """The tables a run writes (hidden `__` objects excluded), in declaration order."""
    return [t["name"] for t in analysis.get("tables", []) if not t["hidden"]]
