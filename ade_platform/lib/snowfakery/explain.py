"""Explain recipe errors: the failing construct, the rule it breaks and the smallest edit that fixes it.

Works from what the parser already said (each error's kind, message, filename and line, as Snowfakery's
exceptions and the YAML parser carry them), the recipe's own text and declarations (objects, nicknames,
options, fields) and the recipe JSON schema (which keys a statement allows). No model is involved: every
rule below matches one family of Snowfakery or YAML messages, and the suggested edit is derived from the
message (Snowfakery's own "Did you mean ...?"), the closest declared name, or the YAML around the line.
"""

from __future__ import annotations

import difflib
import importlib.util
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# How far below the reported line a construct is looked for: Snowfakery reports a field's line, and the
# failing value (a `fake:` block, a function's arguments) can sit a few lines under it.
_LOOKAHEAD = 8
_FORMULA = re.compile(r"\$\{\{(.*?)(\}\}|$)")
_AT_LOCATION = re.compile(r"\((?P<file>[^()]*):(?P<line>\d+)\)\s*$")
_STATEMENT_KEYS = (
    "object",
    "table",
    "var",
    "option",
    "macro",
    "include_file",
    "plugin",
    "snowfakery_version",
)
_VAR = re.compile(r"^\s*-\s+var:\s*([A-Za-z_]\w*)", re.M)
_TRAILING_OPERATOR = re.compile(r"\s*(\+|-|\*\*|\*|//|/|%|~|==|!=|<=|>=|<|>|and|or|not|,)\s*$")


@dataclass(frozen=True)
class RecipeFacts:
    """Names a recipe declares, for "did you mean" suggestions, and the schema's statement keys."""

    tables: Sequence[str] = ()
    nicknames: Sequence[str] = ()
    options: Sequence[str] = ()
    fields: Sequence[str] = ()
    variables: Sequence[str] = ()
    statement_properties: dict[str, Sequence[str]] = field(default_factory=dict)
    plugins: Sequence[str] = ()


@dataclass
class _Finding:
    construct: str | None
    rule: str
    description: str
    line: int | None = None
    before: str | None = None
    after: str | None = None


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
        "source_line": _line(lines, line),
    }


def _clean_message(message: str) -> str:
    # Snowfakery's "Unknown object type" message prints the statement's internals (line trackers)
    if message.startswith("Unknown object type"):
        return "Unknown object type: the statement has no `object` (or other statement) key"
    return message


# -- the rules ------------------------------------------------------------------------------------------------
def _rule_for(
    kind: str, message: str, lines: list[str], line: int | None, column: int | None, facts: RecipeFacts
) -> _Finding:
    if kind == "YamlSyntaxError":
        return _yaml(message, lines, line, column)
    for pattern, handler in _RULES:
        match = pattern.search(message)
        if match:
            return handler(match, lines, line, facts)
    if kind in ("PluginNotAllowed", "SalesforceOrgRequired"):
        return _refused_plugin(kind, lines, line)
    return _Finding(
        construct=_line(lines, line),
        rule="Snowfakery rejected this construct (see message)",
        description="edit the construct at this line as the message says, then validate again",
    )


def _unknown_fake(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> _Finding:
    bad, good = match.group("bad"), match.group("good")
    rule = (
        "`fake:` (or `fake.` in a formula) must name a Faker provider, e.g. first_name, email, company "
        "(snowfakery://docs/fakedata lists them)"
    )
    return _rename(f"fake: {bad}", rule, bad, good, lines, line, "a Faker provider name")


def _unknown_reference(
    match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts
) -> _Finding:
    bad, good = match.group("bad"), match.group("good")
    known = [*facts.tables, *facts.nicknames]
    good = good or _closest(bad, known)
    rule = f"{match.group('func')} must name an object (table) or a nickname that the recipe declares" + (
        f" (declared: {', '.join(known[:20])})" if known else ""
    )
    construct = f"{match.group('func')}: {bad}"
    if good:
        return _rename(construct, rule, bad, good, lines, line, "a declared object or nickname")
    return _Finding(
        construct,
        rule,
        f"declare `- object: {bad}` in the recipe, or give an existing object `nickname: {bad}`",
    )


def _unknown_function(
    match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts
) -> _Finding:
    bad, good = match.group("bad"), match.group("good")
    rule = (
        "a function block must use one of Snowfakery's functions (random_number, random_choice, date, "
        "reference, ...) or a function of a declared plugin"
    )
    if not good:
        return _Finding(
            f"{bad}:",
            rule,
            f"fix the name {bad!r}; if a plugin provides it, declare that plugin (`- plugin: ...`) and call "
            "it as Plugin.function",
        )
    return _rename(f"{bad}:", rule, bad, good, lines, line, "a Snowfakery function")


def _undefined_name(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> _Finding:
    bad = match.group("bad")
    if bad == "input":
        return _Finding(
            "input",
            "`input` exists only in update mode, where each row of an input CSV feeds the recipe's single "
            "object template",
            "run it with snowfakery.run_recipe(update_input_file=<workspace CSV>); to validate it on its "
            "own, replace ${{input.<column>}} with sample values",
        )
    known = [*facts.fields, *facts.tables, *facts.nicknames, *facts.options, *facts.variables]
    good = _closest(bad, known)
    rule = (
        "a formula can use this object's fields, declared objects and nicknames, options, `var`s, plugins "
        "and Snowfakery's functions; any other name is undefined"
    )
    if good:
        return _rename(bad, rule, bad, good, lines, line, "a declared name")
    return _Finding(
        bad,
        rule,
        f"declare `{bad}` (`- var: {bad}` with a `value:`, or `- option: {bad}`), or fix its spelling",
    )


def _unexpected_key(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> _Finding:
    bad = match.group("bad")
    statement = _statement_kind(lines, line)
    allowed = list(facts.statement_properties.get(statement, ())) or list(
        facts.statement_properties.get("object", ())
    )
    good = _closest(bad, allowed)
    rule = f"an `{statement}` statement allows only the keys {', '.join(allowed)} (recipe JSON schema)"
    if good:
        return _rename(f"{bad}:", rule, bad, good, lines, line, "an allowed key")
    return _Finding(f"{bad}:", rule, f"remove `{bad}:` or move it under `fields:`")


def _missing_statement_key(
    match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts
) -> _Finding:
    rule = (
        "every item of a recipe is a statement whose first key says what it is: "
        + ", ".join(f"`{k}`" for k in _STATEMENT_KEYS)
        + "; an object template needs `object: <Name>` (recipe JSON schema: 'object' is required)"
    )
    text = _line(lines, line)
    if text is None:
        return _Finding(None, rule, "add `object: <Name>` to the statement")
    indent = len(text) - len(text.lstrip())
    stripped = text.strip()
    if stripped.startswith("- "):
        after = f"{' ' * indent}- object: NewObject\n{' ' * (indent + 2)}{stripped[2:]}"
    else:
        after = f"{' ' * indent}object: NewObject\n{text}"
    return _Finding(
        stripped,
        rule,
        "add an `object:` key naming the table this statement generates (NewObject is a placeholder)",
        line,
        text,
        after,
    )


def _wrong_type(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> _Finding:
    key, wanted, got = match.group("key"), match.group("wanted"), match.group("got")
    rule = f"`{key}` must be a {_type_name(wanted)}, not a {got} (recipe JSON schema)"
    number, text = _find(lines, line, re.compile(rf"\b{re.escape(key)}\s*:"))
    if text is not None:
        head, _, value = text.partition(":")
        items = [v.strip().strip("'\"") for v in value.strip().strip("[]{}").split(",") if v.strip()]
        if items and wanted in ("str", "int"):
            after = f"{head}: {items[0]}"
            return _Finding(f"{key}:{value}", rule, f"give `{key}` a single value", number, text, after)
    return _Finding(f"{key}:", rule, f"give `{key}` a single {_type_name(wanted)} value")


def _not_a_number(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> _Finding:
    value = match.group("value").strip()
    rule = (
        "`count` (and numeric arguments) must be a number, or a formula or function block that evaluates "
        "to one, e.g. ${{random_number(min=1, max=5)}}"
    )
    number, text = _find(lines, line, re.compile(r"\bcount\s*:"))
    if text is None:
        number, text = _find(lines, line, re.compile(re.escape(value)))
    if text is not None and value in text:
        option = _closest(value, list(facts.options))
        replacement = f"${{{{{option}}}}}" if option else "1"
        after = text.replace(value, replacement, 1)
        how = f"use the option {option}" if option else "use a number (1 here) or a formula that yields one"
        return _Finding(f"count: {value}", rule, how, number, text, after)
    return _Finding(value, rule, "replace the value with a number or a formula that yields one")


def _missing_dataset(
    match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts
) -> _Finding:
    path = match.group("path")
    rule = "a dataset file is read relative to the recipe's folder and must exist inside the workspace"
    _, text = _find(lines, line, re.compile(re.escape(path)))
    return _Finding(
        text.strip() if text else path,
        rule,
        f"create {path} (relative to the recipe) or correct the path",
    )


def _missing_plugin(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> _Finding:
    bad = match.group("bad").strip()
    good = _closest(bad, list(facts.plugins), cutoff=0.75)
    rule = (
        "`plugin:` must be the dotted name of an importable plugin class; the standard ones are "
        + ", ".join(p.rsplit(".", 1)[-1] for p in facts.plugins[:12])
    )
    if good:
        return _rename(f"plugin: {bad}", rule, bad, good, lines, line, "a standard plugin")
    number, text = _find(lines, line, re.compile(re.escape(bad)))
    return _Finding(
        f"plugin: {bad}",
        rule,
        "remove this plugin line (or install the plugin where the recipe runs)",
        number,
        text,
        "" if text is not None else None,
    )


def _refused_plugin(kind: str, lines: list[str], line: int | None) -> _Finding:
    text = _line(lines, line)
    rule = (
        "this server runs only plugins in its allow-list (snowfakery.allowed_plugins)"
        if kind == "PluginNotAllowed"
        else "this server has no network or Salesforce org access, so org-backed plugins and functions "
        "cannot run"
    )
    return _Finding(
        text.strip() if text else None,
        rule,
        "delete this line (and the fields that use it), or run the recipe where the plugin is allowed",
        line,
        text,
        "" if text is not None else None,
    )


def _formula_syntax(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> _Finding:
    rule = (
        "a formula ${{ ... }} holds one Jinja expression: brackets and quotes closed, an operand on each "
        "side of every operator"
    )
    number, text = _find(lines, line, re.compile(r"\$\{\{"))
    if text is None:
        return _Finding(None, rule, "fix the formula's syntax: " + match.group("detail"))
    found = _FORMULA.search(text)
    assert found is not None  # _find matched `${{`
    expression = found.group(1)
    fixed = _repair_expression(expression)
    construct = "${{" + expression + "}}"
    if fixed is None or fixed == expression:
        return _Finding(construct, rule, "fix the formula's syntax: " + match.group("detail"))
    after = text[: found.start(1)] + fixed + text[found.end(1) :]
    if not found.group(2):
        after += "}}"
    return _Finding(construct, rule, "complete the expression", number, text, after)


def _repair_expression(expression: str) -> str | None:
    body = expression.rstrip()
    trailing = len(expression) - len(body)
    for opener, closer in (("(", ")"), ("[", "]")):
        missing = body.count(opener) - body.count(closer)
        if missing > 0:
            body = _TRAILING_OPERATOR.sub("", body) + closer * missing
    for quote in ("'", '"'):
        if body.count(quote) % 2:
            body += quote
    if _TRAILING_OPERATOR.search(body):
        body = _TRAILING_OPERATOR.sub("", body)
    return body + " " * trailing if body.strip() else None


# -- YAML ---------------------------------------------------------------------------------------------------
def _yaml(message: str, lines: list[str], line: int | None, column: int | None) -> _Finding:
    rule = (
        "a recipe is YAML: a list of statements, nested keys indented with spaces, and keys of one mapping "
        "aligned at the same column"
    )
    text = _line(lines, line)
    if "'\\t'" in message or "\\t" in message:
        number, tabbed = _find(lines, line, re.compile("\t"), back=True)
        if tabbed is not None:
            rule = "YAML indentation is spaces only; a tab cannot start a token"
            return _Finding(tabbed, rule, "indent with spaces", number, tabbed, tabbed.replace("\t", "  "))
    if "mapping values are not allowed" in message and text is not None:
        key, sep, value = text.partition(": ")
        if sep and ": " in value:
            quoted = value.strip().replace('"', '\\"')
            rule = "a plain YAML value cannot contain ': '; quote it"
            return _Finding(text.strip(), rule, "quote the value", line, text, f'{key}: "{quoted}"')
    if message.startswith(("expected ',' or '}'", "expected ',' or ']'")):
        closer = "}" if "'}'" in message else "]"
        opener = "{" if closer == "}" else "["
        for number in range(min(line or len(lines), len(lines)), 0, -1):
            candidate = lines[number - 1]
            if candidate.count(opener) > candidate.count(closer):
                rule = f"a flow collection opened with `{opener}` must be closed with `{closer}`"
                return _Finding(
                    candidate.strip(),
                    rule,
                    f"close the `{opener}`",
                    number,
                    candidate,
                    candidate.rstrip() + closer,
                )
    if "while scanning a quoted scalar" in message or "unexpected end of stream" in message:
        for number in range(min(line or len(lines), len(lines)), 0, -1):
            candidate = lines[number - 1]
            for quote in ('"', "'"):
                if candidate.count(quote) % 2:
                    rule = "a quoted YAML string must end with the quote it started with"
                    return _Finding(
                        candidate.strip(),
                        rule,
                        f"close the {quote} quote",
                        number,
                        candidate,
                        candidate.rstrip() + quote,
                    )
    if text is not None and line is not None and line > 1:
        aligned = _aligned(lines, line)
        if aligned is not None and aligned != text:
            return _Finding(text.strip(), rule, "align the line with its sibling keys", line, text, aligned)
    where = f"line {line}" + (f", column {column}" if column else "")
    return _Finding(text.strip() if text else None, rule, f"fix the YAML syntax at {where}: {message}")


def _aligned(lines: list[str], line: int) -> str | None:
    """The line re-indented to match the previous line's level (or one level under it after `key:`)."""
    text = lines[line - 1]
    indent = len(text) - len(text.lstrip(" "))
    for number in range(line - 1, 0, -1):
        previous = lines[number - 1]
        if not previous.strip() or previous.lstrip().startswith("#"):
            continue
        level = len(previous) - len(previous.lstrip(" "))
        body = previous.strip()
        if body.startswith("- "):
            level += 2  # the keys of a list item start after "- "
        if body.endswith(":"):
            level += 2
        if level == indent:
            return None
        return " " * level + text.lstrip(" ")
    return None


# -- helpers -------------------------------------------------------------------------------------------------
def _rename(
    construct: str,
    rule: str,
    bad: str,
    good: str | None,
    lines: list[str],
    line: int | None,
    what: str,
) -> _Finding:
    if not good:
        return _Finding(construct, rule, f"replace {bad!r} with {what}")
    word = re.compile(rf"(?<!\w){re.escape(bad)}(?!\w)")
    number, text = _find(lines, line, word)
    if text is None:
        return _Finding(construct, rule, f"replace {bad!r} with {good!r}")
    after = word.sub(good, text, count=1)
    return _Finding(construct, rule, f"replace {bad!r} with {good!r}", number, text, after)


def _find(
    lines: list[str], line: int | None, pattern: re.Pattern[str], *, back: bool = False
) -> tuple[int | None, str | None]:
    """The first line at or below `line` (within the look-ahead; with back=True also just above) that
    matches: (1-based number, text)."""
    if not lines:
        return None, None
    start = line or 1
    order = list(range(start, min(start + _LOOKAHEAD, len(lines)) + 1))
    if back:
        order += list(range(start - 1, max(start - _LOOKAHEAD, 1) - 1, -1))
    if line is None:
        order = list(range(1, len(lines) + 1))
    for number in order:
        if 1 <= number <= len(lines) and pattern.search(lines[number - 1]):
            return number, lines[number - 1]
    return None, None


def _line(lines: list[str], line: int | None) -> str | None:
    if line is None or not 1 <= line <= len(lines):
        return None
    return lines[line - 1]


def _closest(name: str, candidates: list[str], cutoff: float = 0.6) -> str | None:
    if not candidates:
        return None
    lowered = {c.lower(): c for c in candidates}
    if name.lower() in lowered and lowered[name.lower()] != name:
        return lowered[name.lower()]
    match = difflib.get_close_matches(name, candidates, n=1, cutoff=cutoff)
    return match[0] if match else None


def _statement_kind(lines: list[str], line: int | None) -> str:
    """Which statement a line belongs to: the nearest `- <key>:` at or above it."""
    for number in range(min(line or 0, len(lines)), 0, -1):
        stripped = lines[number - 1].strip()
        if stripped.startswith("- "):
            key = stripped[2:].split(":", 1)[0].strip()
            if key in _STATEMENT_KEYS:
                return "object" if key == "table" else key
    return "object"


def _type_name(python: str) -> str:
    return {"str": "string", "int": "integer", "dict": "mapping", "list": "list"}.get(python, python)


_RULES: list[tuple[re.Pattern[str], Callable[..., _Finding]]] = [
    (
        re.compile(r"Unknown Faker provider '(?P<bad>[^']+)'(?:\. Did you mean '(?P<good>[^']+)')?"),
        _unknown_fake,
    ),
    (
        re.compile(
            r"(?P<func>random_reference|reference): Unknown object/nickname '(?P<bad>[^']+)'"
            r"(?:\. Did you mean '(?P<good>[^']+)')?"
        ),
        _unknown_reference,
    ),
    (
        re.compile(r"Unknown function '(?P<bad>[^']+)'(?:\. Did you mean '(?P<good>[^']+)')?"),
        _unknown_function,
    ),
    (re.compile(r"Jinja template error: '(?P<bad>\w+)' is undefined"), _undefined_name),
    (re.compile(r"Jinja syntax error: (?P<detail>.*)"), _formula_syntax),
    (re.compile(r"Unexpected key: (?P<bad>\S+)"), _unexpected_key),
    (re.compile(r"^Unknown object type"), _missing_statement_key),
    (
        re.compile(
            r"Expected `(?P<key>\w+)` to be of type <class '(?P<wanted>\w+)'> instead of `(?P<got>\w+)`"
        ),
        _wrong_type,
    ),
    (re.compile(r"Cannot evaluate (?P<value>.+) as number"), _not_a_number),
    (re.compile(r"Cannot find plugin: (?P<bad>\S+)"), _missing_plugin),
    (re.compile(r"Dataset file '(?P<path>[^']+)' does not exist"), _missing_dataset),
]
