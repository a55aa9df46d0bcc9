"""JMESPath (jmespath.org, the maintained `jmespath` package) over a parsed JSON document, bounded in time and memory.

An agent's expression is untrusted text: a multi-select can double its result at every step, and `join` or
`to_string` can build one string of every reference it collected. So the evaluation counts the expression nodes it
visits (`max_steps`), the two functions that build new text check the size first, and `bounded_size` measures a
result without serializing more than the cap. Failures are `QueryError` with code `invalid_query`.
"""

from __future__ import annotations

import json
from typing import Any

import jmespath
from jmespath import exceptions, functions, visitor

from ade_platform.lib.errors import CodedError

MAX_EXPRESSION_CHARS = 1000
MAX_STEPS = 200_000
MAX_TEXT_CHARS = 2_000_000  # the longest string `join` or `to_string` may build


class QueryError(CodedError):
    """An expression that is not JMESPath, fails on the document, or costs more than the bounds allow."""


class _BoundedFunctions(functions.Functions):
    @functions.signature({"types": ["string"]}, {"types": ["array-string"]})
    def _func_join(self, separator: str, array: list[str]) -> str:
        size = len(separator) * max(len(array) - 1, 0) + sum(len(s) for s in array)
        if size > MAX_TEXT_CHARS:
            raise QueryError(
                "invalid_query", f"join would build {size} characters (at most {MAX_TEXT_CHARS})"
            )
        return separator.join(array)

    @functions.signature({"types": []})
    def _func_to_string(self, arg: Any) -> str:
        if isinstance(arg, str):
            return arg
        if bounded_size(arg, MAX_TEXT_CHARS) > MAX_TEXT_CHARS:
            raise QueryError("invalid_query", f"to_string would build more than {MAX_TEXT_CHARS} characters")
        return json.dumps(arg, separators=(",", ":"), default=str)


class _Budgeted(visitor.TreeInterpreter):
    """The reference interpreter, counting every node it visits (functions' expression references included)."""

    def __init__(self, max_steps: int):
        super().__init__(jmespath.Options(custom_functions=_BoundedFunctions()))
        self.left = max_steps

    def visit(self, node: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
        self.left -= 1
        if self.left < 0:
            raise QueryError("invalid_query", "the expression does too much work; narrow it")
        return super().visit(node, *args, **kwargs)


def evaluate(expression: str, document: Any, *, max_steps: int = MAX_STEPS) -> Any:
    """The value of a JMESPath expression on a document (None when it selects nothing)."""
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise QueryError("invalid_query", f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        parsed = jmespath.compile(expression)
    except exceptions.JMESPathError as exc:
        raise QueryError("invalid_query", f"not a JMESPath expression: {_first_line(exc)}") from None
    try:
        return _Budgeted(max_steps).visit(parsed.parsed, document)
    except exceptions.JMESPathError as exc:  # a function given the wrong type, an unknown function, ...
        raise QueryError(
            "invalid_query", f"the expression fails on this document: {_first_line(exc)}"
        ) from None
    except RecursionError:
        raise QueryError("invalid_query", "the expression nests too deeply") from None


def bounded_size(value: Any, limit: int) -> int:
    """The size of `value` as compact JSON, roughly (strings count their characters), counted only until it
    passes `limit`: a result that references one large subtree a million times is measured in bounded time."""
    size = 0
    stack = [value]
    while stack and size <= limit:
        item = stack.pop()
        if isinstance(item, str):
            size += len(item) + 2
        elif isinstance(item, dict):
            size += 2 + len(item)
            for key, inner in item.items():
                size += len(str(key)) + 3
                stack.append(inner)
        elif isinstance(item, list):
            size += 2 + len(item)
            stack.extend(item)
        else:
            size += len(str(item))
    return size


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
