"""One detection cycle (what the incidents sensor runs), and the incidents as `ade status` and the Dagster UI
show them. Settings come in as plain values: no Dagster, no MCP."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ade_platform.lib.incidents.detect import detect
from ade_platform.lib.incidents.grouping import Policy, reconcile
from ade_platform.lib.incidents.model import IncidentState, feedback_of
from ade_platform.lib.lineage.sources import Topology
from ade_platform.store import StoreReader
from ade_platform.store.incidents import IncidentJournal


@dataclass
class Cycle:
    events: list[dict[str, Any]]  # what this cycle wrote (with seq)
    state: IncidentState  # after it
    symptoms_seen: int
    suppressed: int
    elapsed_ms: float


def run_cycle(
    reader: StoreReader,
    topology: Topology,
    policy: Policy,
    *,
    dialect: str | None = None,
    max_symptoms: int = 200,
    now: float | None = None,
) -> Cycle:
    """Detect from the store, then record what changed: the explaining runs outside the journal's lock, the
    decision (reconcile against the state read under it) inside, so a person's transition meanwhile is kept."""
    started = time.perf_counter()
    at = time.time() if now is None else now
    journal = IncidentJournal(reader.root)
    feedback = feedback_of(journal.state())
    found = detect(reader, topology, dialect=dialect, max_symptoms=max_symptoms, now=at, feedback=feedback)
    suppressed = 0

    def decide(state: IncidentState) -> list[dict[str, Any]]:
        nonlocal suppressed
        result = reconcile(state, found.findings, at, policy)
        suppressed = result.suppressed
        return result.events

    events = journal.change(decide) if found.graph_version is not None else []
    elapsed = (time.perf_counter() - started) * 1000
    return Cycle(events, journal.state(), found.symptoms_seen, suppressed, round(elapsed, 1))


def _iso(at: float | None) -> str:
    if at is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def status_lines(state: IncidentState, limit: int = 10) -> list[str]:
    """`ade status`: the open and acknowledged incidents, newest first."""
    active = sorted(state.active(), key=lambda i: -i["updated_at"])
    if not active:
        return ["incidents: none open"]
    lines = [f"incidents: {len(active)} open or acknowledged"]
    for inc in active[:limit]:
        lines.append(
            f"  {inc['id']}  {inc['status']:<12} since {_iso(inc['opened_at'])}  "
            f"{inc['symptoms_total']} symptom(s)  {inc['verdict'][:140]}"
        )
    if len(active) > limit:
        lines.append(f"  ... and {len(active) - limit} more (incident_list)")
    return lines


def markdown(state: IncidentState, limit: int = 10) -> str:
    """The Dagster UI: each open incident with its symptoms and its chain as a Mermaid graph."""
    active = sorted(state.active(), key=lambda i: -i["updated_at"])
    if not active:
        return "No open incident."
    parts = []
    for inc in active[:limit]:
        symptoms = ", ".join(
            f"{s.get('kind')} {s.get('name') or s.get('node')}" for s in inc["symptoms"][:10]
        )
        parts.append(
            f"### {inc['id']} ({inc['status']})\n\n{inc['verdict']}\n\nSymptoms ({inc['symptoms_total']}): "
            f"{symptoms}\n\n```mermaid\n{inc['chain']}\n```"
        )
    return "\n\n".join(parts)
