"""JMESPath over artifacts (lib/json_query.py): answers, structured errors, and the bounds an agent's expression
cannot get past."""

from __future__ import annotations

import pytest

from ade_platform.lib.json_query import QueryError, bounded_size, evaluate

DOC = {
    "nodes": {
        "model.a.x": {"depends_on": {"nodes": ["model.a.y"]}},
        "model.a.y": {"depends_on": {"nodes": []}},
    }
}


def test_selects_a_part() -> None:
    assert evaluate('nodes."model.a.x".depends_on.nodes', DOC) == ["model.a.y"]
    assert sorted(evaluate("keys(nodes)", DOC)) == ["model.a.x", "model.a.y"]
    assert evaluate("nothing.here", DOC) is None


@pytest.mark.parametrize("expression", ["nodes.[", "foo(@)", "length(`1`)", "x" * 1001])
def test_bad_expressions_are_invalid_query(expression: str) -> None:
    with pytest.raises(QueryError) as caught:
        evaluate(expression, DOC)
    assert caught.value.code == "invalid_query"


def test_an_expression_that_doubles_at_every_step_is_stopped() -> None:
    # 2**40 references if evaluated: the visit budget stops it in bounded time.
    doubling = "[@, @][]" + ".[@, @][]" * 40
    with pytest.raises(QueryError, match="too much work"):
        evaluate(doubling, list(range(10)))


def test_text_building_functions_are_capped() -> None:
    big = {"s": "x" * 600_000}
    with pytest.raises(QueryError, match="join would build"):
        evaluate("join(',', [s, s, s, s])", big)
    with pytest.raises(QueryError, match="to_string"):
        evaluate("to_string([@, @, @, @])", big)


def test_bounded_size_stops_at_the_limit() -> None:
    shared = ["y" * 1000] * 1000
    assert bounded_size([shared] * 1_000_000, 10_000) > 10_000
    assert bounded_size({"a": [1, "bc"]}, 1000) < 30
