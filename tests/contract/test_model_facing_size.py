"""What the gateway costs a host's model: every host puts the names, descriptions and input schemas of all
tools in its model's context, and hosts that defer tools find them by name and first sentence (issue 35).
Measured as `python -m benchmarks.platform.run --context-only` measures it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.platform.run import MODEL_FACING_TARGET, all_toolsets_listing, listing_sizes

# A sentence ends at a period followed by whitespace or the end of the text.
_SENTENCE_END = re.compile(r"\.(?=\s|$)")
FIRST_SENTENCE_MAX = 160
DESCRIPTION_MAX = 480  # the cross-system lineage and incident tools need the most; most need under 250
OUTPUT_SCHEMAS_MAX = 112_500  # half of the 225 kB of issue 35


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    home: Path = tmp_path_factory.mktemp("context")
    return all_toolsets_listing(home)[0]


def first_sentence(description: str) -> str:
    end = _SENTENCE_END.search(description)
    return description if end is None else description[: end.end()]


def test_the_model_facing_definitions_fit_in_10k_tokens(tools: list[dict]) -> None:
    sizes = listing_sizes(tools)
    assert len(tools) >= 60, "every toolset on"
    assert sizes["model_facing"] <= MODEL_FACING_TARGET, (
        f"names + descriptions + input schemas: {sizes} (at most {MODEL_FACING_TARGET} characters); "
        "say it shorter, or describe a shared parameter once (docs/DEVELOPING.md)"
    )
    assert sizes["outputs"] <= OUTPUT_SCHEMAS_MAX, sizes


def test_every_description_opens_with_one_short_sentence_and_stays_short(tools: list[dict]) -> None:
    too_long, no_period, long_descriptions = [], [], []
    for tool in tools:
        description = (tool.get("description") or "").strip()
        first = first_sentence(description)
        if not first.endswith("."):
            no_period.append(tool["name"])
        elif len(first) > FIRST_SENTENCE_MAX:
            too_long.append((tool["name"], len(first)))
        if len(description) > DESCRIPTION_MAX:
            long_descriptions.append((tool["name"], len(description)))
    assert not no_period, f"first sentence does not end with a period: {no_period}"
    assert not too_long, f"first sentence over {FIRST_SENTENCE_MAX} characters: {too_long}"
    assert not long_descriptions, f"description over {DESCRIPTION_MAX} characters: {long_descriptions}"


@pytest.mark.parametrize(
    ("description", "first"),
    [
        ("Runs a query. Read-only.", "Runs a query."),
        ("Lists jobs (id, name).\nPaged.", "Lists jobs (id, name)."),
        ("Reads db.schema.table and its columns", "Reads db.schema.table and its columns"),
    ],
)
def test_the_first_sentence_is_cut_where_a_period_ends_it(description: str, first: str) -> None:
    assert first_sentence(description) == first
