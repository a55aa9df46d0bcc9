"""Root cause at the incident moment, through MCP, on a running platform: a generated project (not the demo) is
materialized with its emulators, then every kind of incident is made after it, the way incidents happen (a
migration, a loader that stops, a dbt build from a terminal, a failing job run, a model edit), and
lineage_explain_incident must rank the cause first, live, right after it; a healthy control gets no confident
verdict. lineage_what_changed lists the change with its source, next to the commit that made it.

On today's main the join answered from snapshots taken before each incident: none of these causes was ranked
first (most were not listed at all), and lineage_what_changed did not exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.lineage.platform import Platform
from benchmarks.lineage.scenarios import KINDS, generate
from mcp_bridge.server import build_server
from tests.helpers import call_tool

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(2400)]
SEED = 3


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    from benchmarks.lineage.generated import generated_platform

    with generated_platform(tmp_path_factory.mktemp("incidents"), SEED) as running:
        yield running


@pytest.fixture(scope="module")
def server(platform: Platform):
    return build_server(platform.settings)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_incident_is_named_first_right_after_it_happens(
    kind: str, platform: Platform, server
) -> None:
    (scenario,) = generate(platform, SEED, 1, (kind,))
    scenario.apply()
    try:
        ok, body = call_tool(server, "lineage_explain_incident", scenario.start)
    finally:
        scenario.revert()
    assert ok, body
    prov = body["provenance"]
    assert prov["source"] == "live" and prov["live"]["run_id"], prov
    if scenario.expected is None:
        assert not body["confident"], (scenario.description, body["verdict"], body["causes"][:3])
        assert all(c["background"] for c in body["causes"] if not c["explains_symptom"]), body["causes"]
        return
    top = body["causes"][0]
    assert scenario.expected.matches(top), (scenario.description, body["verdict"], body["causes"][:3])
    assert body["confident"] and not top["background"], body["verdict"]
    assert top["object"] in body["verdict"] and top["onset"]["first_seen_at"], body["verdict"]
    assert top["evidence_source"]["source"] in ("live", "cache"), top


def test_what_changed_lists_the_live_change_and_the_commit_behind_it(platform: Platform, server) -> None:
    model = next(
        p for p in sorted((platform.project / "models" / "marts").glob("fct_*.sql")) if "daily" not in p.name
    )
    table = model.stem
    original = model.read_text()
    first = original.split("select ", 1)[1].split(",", 1)[0].strip()
    model.write_text(f"select * exclude ({first}), {first} as {first}_key from (\n{original}\n) as t\n")
    platform.git("commit", "-qam", f"Rename {first} in {table}")
    result = platform.dbt("run", "--select", table)
    assert result.returncode == 0, result.stdout[-2000:]
    try:
        args = {"start_kind": "table", "start": f"main.{table}", "since": "1h", "limit": 3}
        ok, page1 = call_tool(server, "lineage_what_changed", args)
        assert ok, page1
        events = list(page1["events"])
        cursor = page1["next_cursor"]
        while cursor:
            ok, more = call_tool(server, "lineage_what_changed", {**args, "cursor": cursor})
            assert ok, more
            events += more["events"]
            cursor = more["next_cursor"]
        assert len(events) == page1["total_events"] and page1["truncated"]
        renamed = [
            e for e in events if e["kind"] == "schema_change" and e["object"] == f"main.{table}.{first}"
        ]
        assert renamed and renamed[0]["change"] == f"renamed to `{first}_key`", events
        assert renamed[0]["source"]["source"] == "live"
        commit = next(e for e in events if e["kind"] == "git_commit" and f"Rename {first}" in e["change"])
        assert (
            commit["detail"]["files"] == [f"models/marts/{model.name}"]
            and commit["detail"]["author"] == "analyst"
        )
        # the run from the terminal: published from the target folder when the gateway first read dbt results
        runs = [e for e in events if e["kind"] == "dbt_run"]
        assert runs and runs[0]["detail"]["statuses"] == {table: "success"}, runs
        times = [e["at"] for e in events]
        assert times == sorted(times, reverse=True)
    finally:
        model.write_text(original)
        platform.git("commit", "-qam", "Revert the rename")
        assert platform.dbt("run", "--select", table).returncode == 0
        platform.clean_outside_runs()


def test_what_the_probes_read_is_recorded_for_the_next_agent(platform: Platform, server) -> None:
    """A table the join read live (renamed column) becomes a table_schema observation, as warehouse_get_schema's
    read would; the next question dates the change from it, not from its own read."""
    from ade_platform.store import StoreReader
    from ade_platform.store.observations import observation_history, table_key
    from mcp_bridge.context import flush_all_observations

    (scenario,) = generate(platform, SEED + 1, 1, ("column_renamed_under_tile",))
    table = scenario.expected.node.rsplit(":", 1)[-1].split(".")  # type: ignore[union-attr]
    scenario.apply()
    try:
        ok, first = call_tool(server, "lineage_explain_incident", scenario.start)
        assert ok and flush_all_observations(30), first
        seen = observation_history(
            StoreReader(platform.settings.store_root), "table_schema", table_key("gen", table[-2], table[-1])
        )
        assert seen and seen[-1].source == "lineage_explain_incident" and seen[-1].state["exists"], seen
        assert scenario.expected.column not in {c["name"] for c in seen[-1].state["columns"]}  # type: ignore[union-attr]
        ok, second = call_tool(server, "lineage_explain_incident", scenario.start)
    finally:
        scenario.revert()
    assert ok, second
    top, before = second["causes"][0], first["causes"][0]
    assert top["object"] == before["object"] and top["onset"]["from"] == "observation", top["onset"]
    assert top["onset"]["first_seen_at"] == before["onset"]["first_seen_at"]


def test_bad_since_and_cursor_are_refused(server) -> None:
    ok, err = call_tool(
        server, "lineage_what_changed", {"start_kind": "table", "start": "dim_accounts", "since": "soon"}
    )
    assert not ok and err["error"] == "invalid_argument" and "since" in err["detail"]
    args = {"start_kind": "table", "start": "dim_accounts", "cursor": "bm90IGEgY3Vyc29y"}
    ok, err = call_tool(server, "lineage_what_changed", args)
    assert not ok and err["error"] == "invalid_cursor" and "cursor" in err["detail"]


def test_a_project_without_git_says_so(platform: Platform, server, tmp_path: Path) -> None:
    git_dir = platform.project / ".git"
    moved = tmp_path / "git-away"
    git_dir.rename(moved)
    try:
        ok, body = call_tool(
            server, "lineage_what_changed", {"start_kind": "table", "start": "dim_accounts", "live": False}
        )
    finally:
        moved.rename(git_dir)
    assert ok, body
    assert any("not in a git repository" in n for n in body["notes"]), body["notes"]
    assert body["provenance"]["source"] == "cache"
