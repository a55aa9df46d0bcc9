"""Infer the structure of VARIANT values as a TypeScript declaration: keys and types, never values.

Runs inside the server on a bounded sample. Keys are structure only when they look like field names:
objects whose keys look like data (emails, ids, long digit runs, UUIDs) or whose key set keeps growing
from sample to sample (maps keyed by customer id, date, ...) are emitted as ``Record<string, T>``, since
their keys are values. Literal types (``"gold" | "silver"``) are never emitted for the same reason.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

MAX_DEPTH = 12
MAX_ARRAY_ITEMS = 100  # elements inspected per array
MAX_KEYS = 200  # distinct keys tracked per object position before it is declared a map
# No spaces: "Jane Doe" is far more often a value than a field name.
_FIELD_KEY = re.compile(r"[A-Za-z_$][A-Za-z0-9_$.:\-]{0,63}")
_TS_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)
_PRIMITIVE_ORDER = ("string", "number", "boolean", "null")
_TOO_DEEP = object()  # JSON text nested beyond what the parser can recurse into


@dataclass
class _Shape:
    """Union of everything seen at one position."""

    primitives: set[str] = field(default_factory=set)
    objects: int = 0  # how many objects were seen here
    keys: dict[str, tuple[int, _Shape]] = field(default_factory=dict)  # key -> (times present, shape)
    max_keys: int = 0
    overflow: bool = False
    array: _Shape | None = None
    unknown: bool = False  # depth limit reached

    def add(self, value: Any, depth: int = 0) -> None:
        if depth > MAX_DEPTH or value is _TOO_DEEP:
            self.unknown = True
        elif value is None:
            self.primitives.add("null")
        elif isinstance(value, bool):
            self.primitives.add("boolean")
        elif isinstance(value, (int, float, Decimal)):
            self.primitives.add("number")
        elif isinstance(value, str):
            self.primitives.add("string")
        elif isinstance(value, dict):
            self._add_object(value, depth)
        elif isinstance(value, (list, tuple)):
            if self.array is None:
                self.array = _Shape()
            for item in itertools.islice(value, MAX_ARRAY_ITEMS):
                self.array.add(item, depth + 1)
        else:
            self.primitives.add("string")  # dates, times, binary: Snowflake renders them as strings

    def _add_object(self, value: dict[Any, Any], depth: int) -> None:
        self.objects += 1
        self.max_keys = max(self.max_keys, len(value))
        for key, child in value.items():
            key = str(key)
            if key not in self.keys and len(self.keys) >= MAX_KEYS:
                self.overflow = True
                continue
            count, shape = self.keys.get(key, (0, _Shape()))
            shape.add(child, depth + 1)
            self.keys[key] = (count + 1, shape)

    def is_map(self) -> bool:
        if self.overflow or any(_data_like(k) for k in self.keys):
            return True
        # A record has a stable key set; a map's union keeps growing with the sample.
        return len(self.keys) > 20 and len(self.keys) > 3 * max(self.max_keys, 1)


def _data_like(key: str) -> bool:
    return (
        not _FIELD_KEY.fullmatch(key)
        or bool(re.search(r"\d{4,}", key))
        or bool(_UUID.search(key))
        or "@" in key
    )


def _parse(value: Any) -> Any:
    # The snow CLI returns VARIANT cells as JSON text; a cell that is not JSON is a plain string.
    if isinstance(value, (str, bytes, bytearray)):
        try:
            return json.loads(value)
        except (ValueError, TypeError):
            return ""
        except RecursionError:
            return _TOO_DEEP
    return value


def _key(name: str) -> str:
    return name if _TS_IDENT.fullmatch(name) else json.dumps(name)


def _render(shape: _Shape, indent: int) -> str:
    parts: list[str] = []
    if shape.unknown:
        parts.append("unknown")
    if shape.objects:
        parts.append(_render_object(shape, indent))
    if shape.array is not None:
        inner = _render(shape.array, indent)
        parts.append(f"({inner})[]" if " | " in inner else f"{inner}[]")
    parts.extend(p for p in _PRIMITIVE_ORDER if p in shape.primitives and p != "null")
    if "null" in shape.primitives:
        parts.append("null")
    return " | ".join(parts) if parts else "unknown"


def _render_object(shape: _Shape, indent: int) -> str:
    if shape.is_map():
        merged = _Shape()
        for _, child in shape.keys.values():
            _merge(merged, child)
        return f"Record<string, {_render(merged, indent)}>"
    if not shape.keys:
        return "Record<string, never>"
    pad = "  " * (indent + 1)
    lines = []
    for name in sorted(shape.keys):
        count, child = shape.keys[name]
        optional = "?" if count < shape.objects else ""
        lines.append(f"{pad}{_key(name)}{optional}: {_render(child, indent + 1)};")
    return "{\n" + "\n".join(lines) + "\n" + "  " * indent + "}"


def _merge(into: _Shape, other: _Shape) -> None:
    into.primitives |= other.primitives
    into.unknown = into.unknown or other.unknown
    into.overflow = into.overflow or other.overflow
    into.objects += other.objects
    into.max_keys = max(into.max_keys, other.max_keys)
    for key, (count, child) in other.keys.items():
        if key not in into.keys and len(into.keys) >= MAX_KEYS:
            into.overflow = True
            continue
        old_count, old = into.keys.get(key, (0, _Shape()))
        _merge(old, child)
        into.keys[key] = (old_count + count, old)
    if other.array is not None:
        if into.array is None:
            into.array = _Shape()
        _merge(into.array, other.array)


def _type_name(name: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", name)
    ident = "".join(w[:1].upper() + w[1:] for w in words)
    return ident if ident and not ident[0].isdigit() else f"Variant{ident}"


def infer_variant_interface(values: Iterable[Any], name: str, sample_size: int) -> str:
    """TypeScript for the first ``sample_size`` values: an ``interface`` when they are objects, else a ``type``."""
    shape = _Shape()
    seen = 0
    for value in itertools.islice(values, max(sample_size, 0)):
        shape.add(_parse(value))
        seen += 1
    type_name = _type_name(name)
    header = f"// inferred from {seen} sampled value(s); keys and types only\n"
    only_objects = (
        shape.objects and not shape.primitives - {"null"} and shape.array is None and not shape.unknown
    )
    if only_objects and not shape.is_map() and shape.keys:
        body = _render_object(shape, 0)
        if "null" in shape.primitives:
            return f"{header}type {type_name} = {body} | null;\n"
        return f"{header}interface {type_name} {body}\n"
    return f"{header}type {type_name} = {_render(shape, 0)};\n"
