"""The rules for Snowfakery's own messages: each matches one family of messages (`RULES`, pattern -> handler) and
derives the fix from the message (Snowfakery's "Did you mean ...?"), the closest declared name or the line."""

from __future__ import annotations

import re
from collections.abc import Callable

from ade_platform.lib.snowfakery.explain._findings import (
    STATEMENT_KEYS,
    Finding,
    RecipeFacts,
    closest,
    find_line,
    line_text,
    rename,
    statement_kind,
)

_FORMULA = re.compile(r"\$\{\{(.*?)(\}\}|$)")
_TRAILING_OPERATOR = re.compile(r"\s*(\+|-|\*\*|\*|//|/|%|~|==|!=|<=|>=|<|>|and|or|not|,)\s*$")


def _unknown_fake(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    bad, good = match.group("bad"), match.group("good")
    rule = (
        "`fake:` (or `fake.` in a formula) must name a Faker provider, e.g. first_name, email, company "
        "(snowfakery://docs/fakedata lists them)"
    )
    return rename(f"fake: {bad}", rule, bad, good, lines, line, "a Faker provider name")


def _unknown_reference(
    match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts
) -> Finding:
    bad, good = match.group("bad"), match.group("good")
    known = [*facts.tables, *facts.nicknames]
    good = good or closest(bad, known)
    rule = f"{match.group('func')} must name an object (table) or a nickname that the recipe declares" + (
        f" (declared: {', '.join(known[:20])})" if known else ""
    )
    advice = f"declare `- object: {bad}` in the recipe, or give an existing object `nickname: {bad}`"
    construct = f"{match.group('func')}: {bad}"
    return rename(construct, rule, bad, good, lines, line, "a declared object or nickname", otherwise=advice)


def _unknown_function(
    match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts
) -> Finding:
    bad, good = match.group("bad"), match.group("good")
    rule = (
        "a function block must use one of Snowfakery's functions (random_number, random_choice, date, "
        "reference, ...) or a function of a declared plugin"
    )
    advice = (
        f"fix the name {bad!r}; if a plugin provides it, declare that plugin (`- plugin: ...`) and call it as "
        "Plugin.function"
    )
    return rename(f"{bad}:", rule, bad, good, lines, line, "a Snowfakery function", otherwise=advice)


def _undefined_name(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    bad = match.group("bad")
    if bad == "input":
        return Finding(
            "input",
            "`input` exists only in update mode, where each row of an input CSV feeds the recipe's single "
            "object template",
            "run it with snowfakery.run_recipe(update_input_file=<workspace CSV>); to validate it on its "
            "own, replace ${{input.<column>}} with sample values",
        )
    known = [*facts.fields, *facts.tables, *facts.nicknames, *facts.options, *facts.variables]
    good = closest(bad, known)
    rule = (
        "a formula can use this object's fields, declared objects and nicknames, options, `var`s, plugins "
        "and Snowfakery's functions; any other name is undefined"
    )
    advice = f"declare `{bad}` (`- var: {bad}` with a `value:`, or `- option: {bad}`), or fix its spelling"
    return rename(bad, rule, bad, good, lines, line, "a declared name", otherwise=advice)


def _unexpected_key(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    bad = match.group("bad")
    statement = statement_kind(lines, line)
    allowed = list(facts.statement_properties.get(statement, ())) or list(
        facts.statement_properties.get("object", ())
    )
    good = closest(bad, allowed)
    rule = f"an `{statement}` statement allows only the keys {', '.join(allowed)} (recipe JSON schema)"
    advice = f"remove `{bad}:` or move it under `fields:`"
    return rename(f"{bad}:", rule, bad, good, lines, line, "an allowed key", otherwise=advice)


def _missing_statement_key(
    match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts
) -> Finding:
    rule = (
        "every item of a recipe is a statement whose first key says what it is: "
        + ", ".join(f"`{k}`" for k in STATEMENT_KEYS)
        + "; an object template needs `object: <Name>` (recipe JSON schema: 'object' is required)"
    )
    text = line_text(lines, line)
    if text is None:
        return Finding(None, rule, "add `object: <Name>` to the statement")
    indent = len(text) - len(text.lstrip())
    stripped = text.strip()
    if stripped.startswith("- "):
        after = f"{' ' * indent}- object: NewObject\n{' ' * (indent + 2)}{stripped[2:]}"
    else:
        after = f"{' ' * indent}object: NewObject\n{text}"
    return Finding(
        stripped,
        rule,
        "add an `object:` key naming the table this statement generates (NewObject is a placeholder)",
        line,
        text,
        after,
    )


def _wrong_type(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    key, wanted, got = match.group("key"), match.group("wanted"), match.group("got")
    rule = f"`{key}` must be a {_type_name(wanted)}, not a {got} (recipe JSON schema)"
    number, text = find_line(lines, line, re.compile(rf"\b{re.escape(key)}\s*:"))
    if text is not None:
        head, _, value = text.partition(":")
        items = [v.strip().strip("'\"") for v in value.strip().strip("[]{}").split(",") if v.strip()]
        if items and wanted in ("str", "int"):
            after = f"{head}: {items[0]}"
            return Finding(f"{key}:{value}", rule, f"give `{key}` a single value", number, text, after)
    return Finding(f"{key}:", rule, f"give `{key}` a single {_type_name(wanted)} value")


def _not_a_number(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    value = match.group("value").strip()
    rule = (
        "`count` (and numeric arguments) must be a number, or a formula or function block that evaluates "
        "to one, e.g. ${{random_number(min=1, max=5)}}"
    )
    number, text = find_line(lines, line, re.compile(r"\bcount\s*:"))
    if text is None:
        number, text = find_line(lines, line, re.compile(re.escape(value)))
    if text is not None and value in text:
        option = closest(value, list(facts.options))
        replacement = f"${{{{{option}}}}}" if option else "1"
        after = text.replace(value, replacement, 1)
        how = f"use the option {option}" if option else "use a number (1 here) or a formula that yields one"
        return Finding(f"count: {value}", rule, how, number, text, after)
    return Finding(value, rule, "replace the value with a number or a formula that yields one")


def _missing_dataset(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    path = match.group("path")
    rule = "a dataset file is read relative to the recipe's folder and must exist inside the workspace"
    _, text = find_line(lines, line, re.compile(re.escape(path)))
    return Finding(
        text.strip() if text else path,
        rule,
        f"create {path} (relative to the recipe) or correct the path",
    )


def _missing_plugin(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    bad = match.group("bad").strip()
    good = closest(bad, list(facts.plugins), cutoff=0.75)
    rule = (
        "`plugin:` must be the dotted name of an importable plugin class; the standard ones are "
        + ", ".join(p.rsplit(".", 1)[-1] for p in facts.plugins[:12])
    )
    if good:
        return rename(f"plugin: {bad}", rule, bad, good, lines, line, "a standard plugin")
    number, text = find_line(lines, line, re.compile(re.escape(bad)))
    return Finding(
        f"plugin: {bad}",
        rule,
        "remove this plugin line (or install the plugin where the recipe runs)",
        number,
        text,
        "" if text is not None else None,
    )


def refused_plugin(kind: str, lines: list[str], line: int | None) -> Finding:
    text = line_text(lines, line)
    rule = (
        "this server runs only plugins in its allow-list (snowfakery.allowed_plugins)"
        if kind == "PluginNotAllowed"
        else "this server has no network or Salesforce org access, so org-backed plugins and functions "
        "cannot run"
    )
    return Finding(
        text.strip() if text else None,
        rule,
        "delete this line (and the fields that use it), or run the recipe where the plugin is allowed",
        line,
        text,
        "" if text is not None else None,
    )


def _formula_syntax(match: re.Match[str], lines: list[str], line: int | None, facts: RecipeFacts) -> Finding:
    rule = (
        "a formula ${{ ... }} holds one Jinja expression: brackets and quotes closed, an operand on each "
        "side of every operator"
    )
    number, text = find_line(lines, line, re.compile(r"\$\{\{"))
    if text is None:
        return Finding(None, rule, "fix the formula's syntax: " + match.group("detail"))
    found = _FORMULA.search(text)
    assert found is not None  # find_line matched `${{`
    expression = found.group(1)
    fixed = _repair_expression(expression)
    construct = "${{" + expression + "}}"
    if fixed is None or fixed == expression:
        return Finding(construct, rule, "fix the formula's syntax: " + match.group("detail"))
    after = text[: found.start(1)] + fixed + text[found.end(1) :]
    if not found.group(2):
        after += "}}"
    return Finding(construct, rule, "complete the expression", number, text, after)


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


def _type_name(python: str) -> str:
    return {"str": "string", "int": "integer", "dict": "mapping", "list": "list"}.get(python, python)


RULES: list[tuple[re.Pattern[str], Callable[..., Finding]]] = [
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
