"""The form in which a tool's JSON schemas are published: the same constraints in fewer bytes.

Every MCP client downloads every tool's schemas at start-up, and a host puts the input schemas in its model's
context, so what pydantic adds for its own bookkeeping is dropped and what it spells long is spelled short:
- `title` of every schema (pydantic's `"Node Id"` for `node_id`: the property's name says it);
- `additionalProperties: true` (the default of JSON Schema: our answer shapes are open, lib/shapes.py);
- `default: null` (an optional parameter is one not in `required`);
- `anyOf: [X, {"type": "null"}]` becomes X with `"type": [X's type, "null"]` when X is a plain typed schema
  (no enum or const, which would then have to list null, and no `$ref`).
Input schemas are published with their `$ref`s inlined (a model reads one flat schema), and in the form a
model reads (every host puts them in its context; `published_input`):
- an optional parameter whose default is null is advertised without its null (`"string"`, not
  `["string", "null"]`): leaving it out means null;
- string length bounds (`maxLength`, `minLength`) are not advertised: they guard the server against
  oversized input, not tell the model what to send, and the tool's own pydantic model still enforces them on
  every call (`invalid_argument`, tests/mcp/test_advertised_schemas.py).
Types, enums, `required`, `additionalProperties: false`, numeric and item bounds and defaults that are not
null all stay. Output schemas keep
pydantic's `$defs` for a shape used more than once in the same answer (a `$ref` within the document, which
clients resolve) and inline those used once (a recursive one keeps its reference). Nothing else changes: the same properties, types, bounds, enums
and descriptions, so a value valid before is valid now, and the arguments are still validated by the tool's
own pydantic model at call time.
"""

from __future__ import annotations

import json
import re
from typing import Any

_REF = re.compile(r'"\$ref": "(#/\$defs/[^"]+)"')
# Keywords whose value is data, not a schema: never rewritten.
_DATA = frozenset({"default", "enum", "const", "examples", "required"})
# Keywords whose value maps names to schemas (a property named "title" is kept).
_NAMED = frozenset({"properties", "$defs", "definitions", "patternProperties"})
# Not advertised in input schemas: the tools' pydantic models enforce them (see the module's docstring).
_LENGTH_BOUNDS = frozenset({"maxLength", "minLength"})


def published_input(schema: dict[str, Any]) -> dict[str, Any]:
    return compact(_optional_without_null(_inlined(schema)), drop=_LENGTH_BOUNDS)


def published_output(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None:
        return None
    return _inline_single_use(compact(schema))


def compact(schema: Any, drop: frozenset[str] = frozenset()) -> Any:
    """The schema without pydantic's bookkeeping, and without the keywords in `drop`."""
    if isinstance(schema, list):
        return [compact(item, drop) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" or key in drop or (key == "additionalProperties" and value is True):
            continue
        if key == "default" and value is None:
            continue
        if key in _DATA:
            out[key] = value
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {name: compact(sub, drop) for name, sub in value.items()}
        else:
            out[key] = compact(value, drop)
    return _types_union(_nullable(out))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [X, null]` as X with a type list, where that means the same."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return schema
    other = options[1] if options[0] == {"type": "null"} else options[0]
    if not isinstance(other, dict) or not isinstance(other.get("type"), str):
        return schema
    if other.keys() & {"enum", "const", "$ref", "anyOf", "oneOf", "allOf"}:
        return schema
    if other.keys() & (schema.keys() - {"anyOf"}):  # an outer keyword would clash with the option's
        return schema
    merged = {key: value for key, value in schema.items() if key != "anyOf"}
    merged.update(other)
    merged["type"] = [other["type"], "null"]
    return merged


def _types_union(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf` of bare types (`{"type": "string"}`, `{"type": "integer"}`, ...) as one type list."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or len(options) < 2 or "type" in schema:
        return schema
    if not all(isinstance(o, dict) and o.keys() == {"type"} and isinstance(o["type"], str) for o in options):
        return schema
    merged = {key: value for key, value in schema.items() if key != "anyOf"}
    merged["type"] = [o["type"] for o in options]
    return merged


def _optional_without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """Each top-level parameter that is optional with a null default, advertised without the null."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    required = set(schema.get("required") or ())
    out = dict(properties)
    for name, prop in properties.items():
        if (
            name in required
            or not isinstance(prop, dict)
            or "default" not in prop
            or prop["default"] is not None
        ):
            continue
        out[name] = _drop_null({key: value for key, value in prop.items() if key != "default"})
    return {**schema, "properties": out}


def _drop_null(prop: dict[str, Any]) -> dict[str, Any]:
    kinds = prop.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        rest = [kind for kind in kinds if kind != "null"]
        return {**prop, "type": rest[0] if len(rest) == 1 else rest}
    options = prop.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [option for option in options if option != {"type": "null"}]
        if len(rest) > 1:
            return {**prop, "anyOf": rest}
        outer = {key: value for key, value in prop.items() if key != "anyOf"}
        # the parameter's own keywords (its description) win over the option's
        return {**rest[0], **outer} if isinstance(rest[0], dict) else prop
    return prop


def _inline_single_use(schema: dict[str, Any]) -> dict[str, Any]:
    """Inline each `$defs` entry referenced once (unless it reaches itself); keep those shared."""
    while schema.get("$defs"):
        defs = schema["$defs"]
        text = json.dumps(schema)
        single = next(
            (
                name
                for name in defs
                if text.count(json.dumps(f"#/$defs/{name}")) == 1 and name not in _reachable(defs[name], defs)
            ),
            None,
        )
        if single is None:
            break
        rest = {name: body for name, body in defs.items() if name != single}
        schema = _replace_ref({**schema, "$defs": rest}, f"#/$defs/{single}", defs[single])
    if "$defs" in schema and not schema["$defs"]:
        schema = {key: value for key, value in schema.items() if key != "$defs"}
    return schema


def _reachable(node: Any, defs: dict[str, Any], found: set[str] | None = None) -> set[str]:
    """The names of the definitions a schema refers to, directly or through other definitions."""
    found = set() if found is None else found
    for ref in _REF.findall(json.dumps(node)):
        name = ref.rsplit("/", 1)[-1]
        if name not in found and name in defs:
            found.add(name)
            _reachable(defs[name], defs, found)
    return found


def _replace_ref(schema: Any, ref: str, body: dict[str, Any]) -> Any:
    if isinstance(schema, list):
        return [_replace_ref(item, ref, body) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("$ref") == ref:
        # keywords beside the $ref (a description) stay, and override the shared body's
        return {**body, **{k: v for k, v in schema.items() if k != "$ref"}}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _NAMED and isinstance(value, dict):  # names, not keywords: a property called "examples"
            out[key] = {name: _replace_ref(sub, ref, body) for name, sub in value.items()}
        else:
            out[key] = value if key in _DATA else _replace_ref(value, ref, body)
    return out


def _inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with its `$ref`s inlined, as FastMCP's dereferencing would send it."""
    if "$defs" not in schema and '"$ref"' not in json.dumps(schema):
        return schema
    from fastmcp.utilities.json_schema import dereference_refs

    return dereference_refs(schema)
