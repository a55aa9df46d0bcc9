"""The incidents' core: lifecycle, grouping and bounds (model.py, grouping.py) and the journal
(store/incidents.py), including concurrent writers in threads and in processes never losing a transition."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ade_platform.lib.incidents.grouping import Finding, Policy, reconcile
from ade_platform.lib.incidents.model import (
    ACTIONS,
    IncidentError,
    IncidentState,
    fold,
    incident_id,
    transition,
)
from ade_platform.store.incidents import IncidentJournal
from ade_platform.store.paths import LocalRoot


def finding(node: str = "warehouse:demo:table:main.orders", cause: str = "schema_change", tile: str = "t1"):
    return Finding(
        node=node,
        cause=cause,
        cause_detail={"object": node, "change": "renamed status"},
        symptom={"node": f"looker:tile:{tile}", "kind": "tile", "status": "failed"},
        verdict=f"tile {tile} fails. Cause: {node} {cause}.",
        confidence="high",
        systems={"looker", "warehouse"},
    )


def step(state: IncidentState, events: list[dict]) -> IncidentState:
    numbered = [{**e, "seq": state.seq + i + 1} for i, e in enumerate(events)]
    return fold(state, numbered)


def test_one_incident_per_cause_with_every_symptom() -> None:
    state = IncidentState.empty()
    found = [finding(tile="t1"), finding(tile="t2"), finding(node="dbt:source:x", cause="stale_source")]
    state = step(state, reconcile(state, found, 100.0, Policy()).events)
    assert len(state.incidents) == 2
    inc = state.incidents[incident_id("warehouse:demo:table:main.orders", "schema_change")]
    assert inc["status"] == "open"
    assert sorted(s["node"] for s in inc["symptoms"]) == ["looker:tile:t1", "looker:tile:t2"]
    # the same findings again change nothing
    assert reconcile(state, found, 160.0, Policy()).events == []


def test_lifecycle_and_invalid_transitions() -> None:
    state = step(IncidentState.empty(), reconcile(IncidentState.empty(), [finding()], 1.0, Policy()).events)
    ident = next(iter(state.incidents))
    with pytest.raises(IncidentError) as err:
        transition(state, ident, "reopen", by="ann", at=2.0)
    assert err.value.code == "invalid_transition"
    state = step(state, [transition(state, ident, "acknowledge", by="ann", note="looking", at=2.0)])
    assert state.incidents[ident]["status"] == "acknowledged"
    assert state.incidents[ident]["acknowledged_by"] == "ann"
    with pytest.raises(IncidentError):
        transition(state, ident, "acknowledge", by="bob", at=3.0)
    state = step(state, [transition(state, ident, "resolve", by="bob", cause_was_right=False, at=3.0)])
    inc = state.incidents[ident]
    assert inc["status"] == "resolved" and inc["feedback"]["cause_was_right"] is False
    assert [e["event"] for e in inc["timeline"]] == ["opened", "acknowledged", "resolved"]
    assert inc["timeline"][1]["note"] == "looking"
    with pytest.raises(IncidentError) as missing:
        transition(state, "inc-000000000000", "resolve", by="x", at=4.0)
    assert missing.value.code == "incident_not_found"


def test_a_resolved_incident_reopens_only_when_its_cause_comes_back() -> None:
    policy = Policy(grouping_window_seconds=0)
    state = step(IncidentState.empty(), reconcile(IncidentState.empty(), [finding()], 1.0, policy).events)
    ident = next(iter(state.incidents))
    state = step(state, [transition(state, ident, "resolve", by="ann", at=2.0)])
    # still present at the next tick: resolving while the store still shows it does not bounce back
    assert reconcile(state, [finding()], 3.0, policy).events == []
    state = step(state, reconcile(state, [], 4.0, policy).events)
    assert state.incidents[ident]["cause_present"] is False and state.incidents[ident]["status"] == "resolved"
    state = step(state, reconcile(state, [finding()], 5.0, policy).events)
    inc = state.incidents[ident]
    assert inc["status"] == "open" and inc["reopened"] == 1 and len(state.incidents) == 1


def test_detection_never_resolves_and_not_an_incident_stays_closed() -> None:
    policy = Policy(grouping_window_seconds=0)
    state = step(IncidentState.empty(), reconcile(IncidentState.empty(), [finding()], 1.0, policy).events)
    ident = next(iter(state.incidents))
    state = step(state, reconcile(state, [], 2.0, policy).events)
    assert state.incidents[ident]["status"] == "open"
    assert state.incidents[ident]["timeline"][-1]["event"] == "cause_cleared"
    state = step(state, [transition(state, ident, "not_an_incident", by="ann", at=3.0)])
    state = step(state, reconcile(state, [finding()], 4.0, policy).events)
    assert state.incidents[ident]["status"] == "not_an_incident"
    assert state.incidents[ident]["timeline"][-1]["event"] == "cause_returned"


def test_flapping_makes_no_storm() -> None:
    policy = Policy(grouping_window_seconds=600, max_open=3)
    state = IncidentState.empty()
    for tick in range(200):  # the cause comes and goes every 10 s
        found = [finding()] if tick % 2 == 0 else []
        state = step(state, reconcile(state, found, 10.0 * tick, policy).events)
    assert len(state.incidents) == 1
    inc = next(iter(state.incidents.values()))
    assert inc["flaps"] >= 190 and len(inc["timeline"]) <= 3


def test_open_incidents_are_bounded() -> None:
    policy = Policy(max_open=5)
    found = [finding(node=f"dbt:model:m{i}", cause="failed_model") for i in range(20)]
    result = reconcile(IncidentState.empty(), found, 1.0, policy)
    state = step(IncidentState.empty(), result.events)
    assert len(state.active()) == 5 and result.suppressed == 15


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["tick_on", "tick_off", *ACTIONS]), st.booleans()), min_size=1, max_size=40
    )
)
def test_any_sequence_keeps_the_lifecycle(steps: list[tuple[str, bool]]) -> None:
    """Whatever people and detection do, in any order: statuses stay in the lifecycle, a refused action
    changes nothing, one cause is one incident, and the timeline stays bounded."""
    policy = Policy(grouping_window_seconds=5)
    state = IncidentState.empty()
    at = 0.0
    for action, right in steps:
        at += 3.0
        if action.startswith("tick"):
            state = step(
                state, reconcile(state, [finding()] if action == "tick_on" else [], at, policy).events
            )
            continue
        if not state.incidents:
            continue
        ident = next(iter(state.incidents))
        before = state.incidents[ident]["status"]
        try:
            event = transition(
                state, ident, action, by="p", cause_was_right=right if action == "resolve" else None, at=at
            )
        except IncidentError as exc:
            assert exc.code == "invalid_transition" and before not in ACTIONS[action][0]
            continue
        state = step(state, [event])
        assert state.incidents[ident]["status"] == ACTIONS[action][1]
    assert len(state.incidents) <= 1
    for inc in state.incidents.values():
        assert inc["status"] in ("open", "acknowledged", "resolved", "not_an_incident")
        assert len(inc["timeline"]) <= 100


# ---- the journal -------------------------------------------------------------------------------------------
def _open_one(root: Path) -> str:
    journal = IncidentJournal(LocalRoot(root))
    journal.change(lambda s: reconcile(s, [finding()], 1.0, Policy()).events)
    return next(iter(journal.state().incidents))


def _note(root: str, ident: str, who: str, count: int) -> None:
    journal = IncidentJournal(LocalRoot(Path(root)))
    for i in range(count):
        journal.change(
            lambda s, i=i: [
                {
                    "incident": ident,
                    "type": "updated",
                    "at": 1.0,
                    "by": who,
                    "note": f"{who}-{i}",
                    "data": {"symptoms": [], "verdict": f"{who}-{i}"},
                }
            ]
        )


def _events(root: Path) -> list[dict]:
    import orjson

    lines = (root / ".incidents" / "journal.jsonl").read_bytes().splitlines()
    return [orjson.loads(line) for line in lines if line.strip()]


def test_concurrent_threads_lose_no_transition(tmp_path: Path) -> None:
    ident = _open_one(tmp_path)
    threads = [threading.Thread(target=_note, args=(str(tmp_path), ident, f"w{n}", 25)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = _events(tmp_path)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert len([e for e in events if e["type"] == "updated"]) == 150
    assert IncidentJournal(LocalRoot(tmp_path)).state().incidents[ident]["revision"] == 151


def test_concurrent_processes_lose_no_transition(tmp_path: Path) -> None:
    ident = _open_one(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_note, args=(str(tmp_path), ident, f"p{n}", 20)) for n in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    events = _events(tmp_path)
    assert [e["seq"] for e in events] == list(range(1, 82))
    assert {f"p{n}-{i}" for n in range(4) for i in range(20)} == {
        e["note"] for e in events if e["type"] == "updated"
    }


def test_compaction_keeps_the_state_and_bounds_the_journal(tmp_path: Path) -> None:
    journal = IncidentJournal(LocalRoot(tmp_path), max_events=30, max_closed=2)
    policy = Policy(max_open=100)
    journal.change(
        lambda s: (
            reconcile(s, [finding(node=f"n{i}", cause="failed_model") for i in range(10)], 1.0, policy).events
        )
    )
    for ident in sorted(journal.state().incidents)[:6]:
        journal.change(lambda s, ident=ident: [transition(s, ident, "resolve", by="a", at=2.0)])

    def next_step(s: IncidentState) -> list[dict]:
        waiting = sorted(i["id"] for i in s.active() if i["status"] == "open")
        if waiting:
            return [transition(s, waiting[0], "acknowledge", by="a", at=3.0)]
        return [{"incident": "gone", "type": "updated", "at": 4.0, "data": {}}]  # an event of nothing kept

    for _ in range(40):
        journal.change(next_step)
    state = journal.state()
    assert len((tmp_path / ".incidents" / "journal.jsonl").read_bytes().splitlines()) <= 31
    assert len([i for i in state.incidents.values() if i["status"] == "resolved"]) == 2
    assert len(state.active()) == 4 and all(i["status"] == "acknowledged" for i in state.active())


def test_feedback_comes_from_resolved_incidents() -> None:
    from ade_platform.lib.incidents.model import feedback_of

    state = IncidentState.empty()
    assert feedback_of(state) is None
    found = [finding(), finding(node="dbt:model:m", cause="failed_model")]
    state = step(state, reconcile(state, found, 1.0, Policy()).events)
    first, second = sorted(state.incidents)
    state = step(state, [transition(state, first, "resolve", by="a", cause_was_right=False, at=2.0)])
    state = step(state, [transition(state, second, "resolve", by="a", at=2.0)])  # no verdict: no feedback
    said = feedback_of(state)
    inc = state.incidents[first]
    assert said.kinds == {inc["key"]["cause"]: (0, 1)} and said.nodes == {inc["key"]["node"]: (0, 1)}


def test_status_lines_and_the_dagster_markdown_show_each_open_incident() -> None:
    from ade_platform.lib.incidents.cycle import markdown, status_lines

    assert status_lines(IncidentState.empty()) == ["incidents: none open"]
    found = [Finding(**{**vars(finding()), "chain": "graph LR\n  a --> b"})]
    state = step(IncidentState.empty(), reconcile(IncidentState.empty(), found, 1.0, Policy()).events)
    (ident,) = state.incidents
    lines = status_lines(state)
    assert (
        lines[0] == "incidents: 1 open or acknowledged" and ident in lines[1] and "1 symptom(s)" in lines[1]
    )
    shown = markdown(state)
    assert f"### {ident} (open)" in shown and "```mermaid\ngraph LR" in shown
