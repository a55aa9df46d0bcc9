"""The published form of tool schemas (mcp_bridge/schema_form.py) accepts and refuses exactly what pydantic's
schema does: fewer bytes, the same constraints."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

import jsonschema
import pytest
from pydantic import Field, TypeAdapter
from typing_extensions import TypedDict

from ade_platform.lib.shapes import OpenShape
from mcp_bridge.schema_form import published_input, published_output


class Ref(OpenShape):
    asset: str
    version: str


class Row(OpenShape):
    # property names that are also JSON Schema keywords stay properties
    title: str | None
    examples: list[Ref]
    kind: Literal["a", "b"] | None
    size: Annotated[int | None, Field(ge=0, le=10)]


class Answer(OpenShape):
    rows: list[Row]
    first: Ref
    last: NotRequired[Ref]
    note: Annotated[str | None, Field(description="kept")]


class Tree(TypedDict):
    name: str
    children: list[Tree]


def original(shape: Any) -> dict[str, Any]:
    return TypeAdapter(shape).json_schema(mode="serialization")


ANSWERS = [
    {"rows": [], "first": {"asset": "a", "version": "1"}, "note": None},
    {
        "rows": [{"title": None, "examples": [{"asset": "x", "version": "2"}], "kind": "a", "size": 3}],
        "first": {"asset": "a", "version": "1"},
        "last": {"asset": "b", "version": "2", "extra": True},
        "note": "n",
        "more": 1,
    },
    {
        "rows": [{"title": "t", "examples": [], "kind": None, "size": None}],
        "first": {"asset": "a", "version": "1"},
    },
    # refused by both
    {"rows": [{"title": 1, "examples": [], "kind": "a", "size": 1}], "first": {"asset": "a", "version": "1"}},
    {
        "rows": [{"title": "t", "examples": [], "kind": "c", "size": 1}],
        "first": {"asset": "a", "version": "1"},
    },
    {
        "rows": [{"title": "t", "examples": [], "kind": None, "size": 11}],
        "first": {"asset": "a", "version": "1"},
    },
    {
        "rows": [{"title": "t", "examples": [{}], "kind": None, "size": 1}],
        "first": {"asset": "a", "version": "1"},
    },
    {"rows": [], "first": {"asset": "a"}, "note": None},
    {"rows": [], "first": {"asset": "a", "version": "1"}, "note": 3},
]


@pytest.mark.parametrize("answer", ANSWERS)
def test_the_published_output_schema_judges_answers_as_pydantics_does(answer: dict[str, Any]) -> None:
    before, after = original(Answer), published_output(original(Answer))
    assert after is not None
    valid = jsonschema.Draft202012Validator(before).is_valid(answer)
    assert jsonschema.Draft202012Validator(after).is_valid(answer) == valid


def test_the_published_form_drops_bookkeeping_and_shares_only_what_is_used_twice() -> None:
    before = original(Answer)
    after = published_output(before)
    assert after is not None
    text = str(after)
    assert "'title': '" not in text.replace("'title': {", "")  # no pydantic titles; the property stays
    assert "additionalProperties': True" not in text
    row = after["properties"]["rows"]["items"]
    assert set(row["properties"]) == {"title", "examples", "kind", "size"}
    assert row["properties"]["size"] == {"maximum": 10, "minimum": 0, "type": ["integer", "null"]}
    assert "anyOf" in row["properties"]["kind"], "an enum with null stays an anyOf (the enum lacks null)"
    assert after["properties"]["note"]["description"] == "kept"
    assert set(after["$defs"]) == {"Ref"}, "Ref is used three times, Row once"
    assert len(str(after)) < len(str(before))


def test_a_recursive_shape_keeps_its_reference() -> None:
    after = published_output(original(Tree))
    assert after is not None
    assert jsonschema.Draft202012Validator(after).is_valid(
        {"name": "a", "children": [{"name": "b", "children": []}]}
    )
    assert not jsonschema.Draft202012Validator(after).is_valid({"name": "a", "children": [{"name": 1}]})


def test_input_schemas_are_inlined_and_keep_their_defaults() -> None:
    class Args(TypedDict):
        ref: Ref
        limit: Annotated[int | None, Field(ge=1)]
        mode: Literal["full", "summary"]

    schema = TypeAdapter(Args).json_schema()
    schema["properties"]["limit"]["default"] = None
    schema["properties"]["mode"]["default"] = "full"
    after = published_input(schema)
    assert "$ref" not in str(after) and "$defs" not in after
    assert "default" not in after["properties"]["limit"]
    assert after["properties"]["mode"]["default"] == "full"


def test_the_advertised_input_drops_length_bounds_and_the_null_of_a_parameter_left_out() -> None:
    from fastmcp.tools.function_tool import FunctionTool

    def fn(
        name: Annotated[str, Field(min_length=1, max_length=9)],
        must_say: Annotated[str | None, Field(max_length=9)],
        note: Annotated[str | None, Field(max_length=9)] = None,
        kind: Literal["a", "b"] | None = None,
        mode: Literal["full", "summary"] | None = "full",
        value: str | int | bool | None = None,
        count: Annotated[int | None, Field(ge=1)] = None,
    ) -> None:
        return None

    after = published_input(FunctionTool.from_function(fn).parameters)
    props = after["properties"]
    assert props["name"] == {"type": "string"}
    assert props["must_say"] == {"type": ["string", "null"]}, "required: null is a value the caller must send"
    assert props["note"] == {"type": "string"}
    assert props["kind"] == {"enum": ["a", "b"], "type": "string"}
    assert "null" in str(props["mode"]), "a default that is not null: null is a different choice"
    assert props["value"] == {"type": ["string", "integer", "boolean"]}
    assert props["count"] == {"minimum": 1, "type": "integer"}
    assert after["required"] == ["name", "must_say"]
