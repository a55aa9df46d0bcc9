"""Snowfakery's recipe reader on libyaml's C parser, for validation inside a sandboxed job.

Snowfakery reads a recipe with PyYAML's pure-Python loader and stamps every mapping and scalar with a line number
(`parse_recipe_yaml.yaml_safe_load_with_line_numbers`); that read is about a third of what validating a small
recipe costs. `c_parsed_recipes()` swaps in a reader that takes the events from libyaml (four times faster) and
keeps Snowfakery's own composer and safe constructor, so the data is the same. The line stamp is Snowfakery's:
the line where the newest event read so far ends. That is the pure-Python reader's line for every mapping, but
not always for a plain scalar (Python's scanner reads past its line break), so the worker keeps this reader to
verdicts without a message: an error or a warning, which may name a line, is answered by Snowfakery's own reader.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: Snowfakery's reader stays in place
    CParser = None


def available() -> bool:
    return CParser is not None


if CParser is not None:

    class _RecipeLoader(Composer, CParser, SafeConstructor, Resolver):  # type: ignore[misc,valid-type]
        """libyaml's events, PyYAML's composer and safe constructor (CSafeLoader composes in C, with no hook)."""

        def __init__(self, stream: IO[str]) -> None:
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)
            self.line = 0  # 0-based line where the newest event read so far ends

        def check_event(self, *choices: Any) -> bool:
            self._read(CParser.peek_event(self))
            return CParser.check_event(self, *choices)

        def peek_event(self) -> Any:
            return self._read(CParser.peek_event(self))

        def get_event(self) -> Any:
            return self._read(CParser.get_event(self))

        def _read(self, event: Any) -> Any:
            if event is not None:
                self.line = event.end_mark.line
            return event


def load_with_line_numbers(stream: IO[str], filename: str) -> tuple[Any, dict[int, Any]]:
    """What `yaml_safe_load_with_line_numbers` answers (the data, line trackers by scalar id), read by libyaml."""
    from snowfakery.parse_recipe_yaml import SHARED_OBJECT, LineTracker

    loader = _RecipeLoader(stream)
    line_numbers: dict[int, Any] = {}

    def compose_node(parent: Any, index: Any) -> Any:
        line = loader.line
        node = Composer.compose_node(loader, parent, index)
        node.__line__ = line + 1
        return node

    def construct_mapping(node: Any, deep: bool = False) -> Any:
        mapping = SafeConstructor.construct_mapping(loader, node, deep=deep)
        mapping["__line__"] = LineTracker(filename, node.__line__)
        return mapping

    def construct_scalar(node: Any) -> Any:
        scalar = SafeConstructor.construct_scalar(loader, node)
        key = id(scalar)
        line_numbers[key] = SHARED_OBJECT if line_numbers.get(key) else LineTracker(filename, node.__line__)
        return scalar

    loader.compose_node = compose_node  # type: ignore[method-assign]
    loader.construct_mapping = construct_mapping  # type: ignore[method-assign]
    loader.construct_scalar = construct_scalar  # type: ignore[method-assign]
    try:
        return loader.get_single_data(), line_numbers
    finally:
        loader.dispose()


@contextmanager
def c_parsed_recipes() -> Iterator[bool]:
    """Within the block Snowfakery reads recipes (and their includes) with libyaml; yields whether it does."""
    from snowfakery import parse_recipe_yaml

    if CParser is None:
        yield False
        return
    original = parse_recipe_yaml.yaml_safe_load_with_line_numbers
    parse_recipe_yaml.yaml_safe_load_with_line_numbers = load_with_line_numbers
    try:
        yield True
    finally:
        parse_recipe_yaml.yaml_safe_load_with_line_numbers = original


__all__ = ["available", "c_parsed_recipes", "load_with_line_numbers"]
