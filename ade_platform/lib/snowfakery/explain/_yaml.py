"""The rule for YAML syntax errors: tabs, an unquoted ': ' in a value, an unclosed flow collection or quote, and a
key out of line with its siblings."""

from __future__ import annotations

import re

from ade_platform.lib.snowfakery.explain._findings import Finding, find_line, line_text


def yaml_rule(message: str, lines: list[str], line: int | None, column: int | None) -> Finding:
    rule = (
        "a recipe is YAML: a list of statements, nested keys indented with spaces, and keys of one mapping "
        "aligned at the same column"
    )
    text = line_text(lines, line)
    if "'\\t'" in message or "\\t" in message:
        number, tabbed = find_line(lines, line, re.compile("\t"), back=True)
        if tabbed is not None:
            rule = "YAML indentation is spaces only; a tab cannot start a token"
            return Finding(tabbed, rule, "indent with spaces", number, tabbed, tabbed.replace("\t", "  "))
    if "mapping values are not allowed" in message and text is not None:
        key, sep, value = text.partition(": ")
        if sep and ": " in value:
            quoted = value.strip().replace('"', '\\"')
            rule = "a plain YAML value cannot contain ': '; quote it"
            return Finding(text.strip(), rule, "quote the value", line, text, f'{key}: "{quoted}"')
    if message.startswith(("expected ',' or '}'", "expected ',' or ']'")):
        closer = "}" if "'}'" in message else "]"
        opener = "{" if closer == "}" else "["
        for number in range(min(line or len(lines), len(lines)), 0, -1):
            candidate = lines[number - 1]
            if candidate.count(opener) > candidate.count(closer):
                rule = f"a flow collection opened with `{opener}` must be closed with `{closer}`"
                return Finding(
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
                    return Finding(
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
            return Finding(text.strip(), rule, "align the line with its sibling keys", line, text, aligned)
    where = f"line {line}" + (f", column {column}" if column else "")
    return Finding(text.strip() if text else None, rule, f"fix the YAML syntax at {where}: {message}")


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
