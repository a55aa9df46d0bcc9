"""A stable, purely syntactic recipe formatter that keeps comments.

Only whitespace changes: block mappings and sequences are re-indented by two spaces per level
(sequences indented under their key, one space after each `-`), comments follow the line they
precede, trailing whitespace goes (outside block scalars), runs of blank lines shrink to one, and the
file ends with a single newline. Scalars, block scalar bodies, flow collections and comments keep their
text. The result must load to exactly the same data as the input, or the input is returned unchanged
with a note: formatting never changes what a recipe means.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import yaml

STEP = 2


class _Unformattable(Exception):
    pass


@dataclass(frozen=True)
class FormatResult:
    text: str
    changed: bool
    notes: list[str] = field(default_factory=list)


def format_recipe(text: str) -> FormatResult:
    """Format recipe text (raises yaml.YAMLError when the text is not YAML)."""
    original = yaml.safe_load(text)
    root = yaml.compose(text)
    if root is None:
        return FormatResult(text, False, ["empty document"])
    try:
        formatted = _Formatter(text).run(root)
    except _Unformattable as exc:
        return FormatResult(text, False, [f"left as is: {exc}"])
    if yaml.safe_load(formatted) != original:
        return FormatResult(text, False, ["left as is: reformatting would have changed the data"])
    return FormatResult(formatted, formatted != text)


class _Formatter:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.new: dict[int, str] = {}  # line -> rewritten line (anchor lines)
        self.delta: dict[int, int] = {}  # line -> indentation shift of the anchor line
        self.verbatim: set[int] = set()  # lines inside multi-line scalars / flow collections

    def run(self, root: yaml.Node) -> str:
        if _is_block(root):
            self._collection(root, 0)
        else:
            self._continuation(root, 0)
        out: list[str] = []
        for number, line in enumerate(self.lines):
            if number in self.new:
                out.append(self.new[number].rstrip())
            elif number in self.verbatim:
                out.append(line)
            elif not line.strip():
                if out and out[-1] != "":
                    out.append("")
            elif line.lstrip().startswith("#"):
                out.append(" " * self._indent_after(number) + line.strip())
            else:
                out.append(line.rstrip())
        while out and out[-1] == "":
            out.pop()
        while out and out[0] == "":
            out.pop(0)
        return "\n".join(out) + "\n"

    def _indent_after(self, number: int) -> int:
        for later in range(number + 1, len(self.lines)):
            if later in self.new:
                text = self.new[later]
                return len(text) - len(text.lstrip())
        return 0

    def _anchor(self, line: int, column: int, indent: int, prefix: str = "") -> None:
        if line in self.new:
            raise _Unformattable("two collections start on one line")
        self.new[line] = " " * indent + prefix + self.lines[line][column:]
        self.delta[line] = indent + len(prefix) - column

    def _collection(self, node: yaml.Node, indent: int) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                line, column = key.start_mark.line, key.start_mark.column
                if not self.lines[line][:column].strip():
                    self._anchor(line, column, indent)
                elif line not in self.new:
                    raise _Unformattable("a key that does not start its line")
                self._value(value, line, indent)
        else:
            for item in node.value:
                line, column = item.start_mark.line, item.start_mark.column
                head = self.lines[line][:column]
                dash = head.rstrip().rfind("-")
                if dash < 0 or head[:dash].strip() or head[dash + 1 :].strip():
                    raise _Unformattable("a sequence entry not on its dash's line")
                self._anchor(line, column, indent, "- ")
                if _is_block(item):
                    if isinstance(item, yaml.SequenceNode):
                        raise _Unformattable("a nested sequence on one line")
                    self._collection(item, indent + STEP)
                else:
                    self._continuation(item, self.delta[line])

    def _value(self, value: yaml.Node, key_line: int, indent: int) -> None:
        if _is_block(value) and value.start_mark.line > key_line:
            self._collection(value, indent + STEP)
        else:
            self._continuation(value, self.delta[key_line])

    def _continuation(self, node: yaml.Node, delta: int) -> None:
        last = node.end_mark.line - (1 if node.end_mark.column == 0 else 0)
        for number in range(node.start_mark.line + 1, last + 1):
            line = self.lines[number] if number < len(self.lines) else ""
            self.verbatim.add(number)
            if not line.strip():
                continue
            current = len(line) - len(line.lstrip(" "))
            if current + delta < 0:
                raise _Unformattable("a continuation line would move left of column 0")
            self.lines[number] = " " * (current + delta) + line.lstrip(" ")


def _is_block(node: yaml.Node) -> bool:
    return isinstance(node, yaml.MappingNode | yaml.SequenceNode) and not node.flow_style
