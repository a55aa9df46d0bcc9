"""Silent incidents through MCP, on a generated project (not the demo), made after it was materialized and
profiled: a model's logic changed by the team (a WHERE added and committed, a CASE changed and only saved), a
source's rows deleted, rewritten, nulled or duplicated by its loader, the models run again, every build green.
lineage_explain_incident from a model, table or tile below must name the node where the change began, its column
and the change with numbers, and the code change when there is one; the loader's ordinary day (new rows appended)
gets no confident verdict; lineage_what_changed lists the value changes as events.

Before this, every one of these answered "looks healthy now" with no cause.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from benchmarks.lineage.platform import Platform
from benchmarks.lineage.scenarios import SILENT, generate
from mcp_bridge.context import flush_all_observations
from mcp_bridge.server import build_server
from tests.helpers import call_tool, call_tools

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]
SEED = 5


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    from benchmarks.lineage.generated import generated_platform

    with generated_platform(tmp_path_factory.mktemp("silent"), SEED) as running:
        yield running


@pytest.fixture(scope="module")
def server(platform: Platform):
    return build_server(platform.settings)


@pytest.mark.parametrize("kind", SILENT)
def test_each_silent_incident_is_named_where_it_began(kind: str, platform: Platform, server) -> None:
    (scenario,) = generate(platform, SEED, 1, (kind,))
    scenario.apply()
    try:
        ok, body = call_tool(server, "lineage_explain_incident", scenario.start)
    finally:
        flush_all_observations(30)
        scenario.revert()
    assert ok, body
    assert body["symptom"]["status"] == "ok", body["symptom"]  # builds green: nothing failed
    if scenario.expected is None:
        assert not body["confident"], (scenario.description, body["verdict"], body["causes"][:3])
        return
    top = body["causes"][0]
    assert scenario.expected.matches(top), (scenario.description, body["verdict"], body["causes"][:3])
    assert body["confident"] and top["explains_symptom"], body["verdict"]
    assert top["object"] in body["verdict"] and "\u2192" in top["change"], body["verdict"]
    assert "builds green, but its values changed" in body["verdict"], body["verdict"]
    changes = top["evidence"]["changes"]
    assert changes and all(c["detail"] for c in changes), top["evidence"]
    if top["cause"] == "logic_change":
        code = top["evidence"]["code"]
        assert code and "SQL" in top["change"], top
        if scenario.kind == "logic_remaps_values":
            assert code["git"]["uncommitted"] is True and "uncommitted edit" in top["change"], code
        else:
            assert code["git"]["author"] == "analyst" and "in commit" in top["change"], code


def test_what_changed_lists_the_value_changes(platform: Platform, server) -> None:
    (scenario,) = generate(platform, SEED + 1, 1, ("source_rows_deleted",))
    scenario.apply()
    try:
        (ok, body), (ok2, changed) = call_tools(
            server,
            [
                ("lineage_explain_incident", scenario.start),
                ("lineage_what_changed", {**scenario.start, "since": "1h"}),
            ],
        )
    finally:
        flush_all_observations(30)
        scenario.revert()
    assert ok and ok2, (body, changed)
    events = [e for e in changed["events"] if e["kind"] == "value_change"]
    assert events, changed["events"][:5]
    assert any(e["node"] == scenario.expected.node for e in events), events  # type: ignore[union-attr]
    assert all(e["source"]["source"] == "live" and "\u2192" in e["change"] for e in events), events
