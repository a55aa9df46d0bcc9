"""From what detection found now to the events that bring the incidents up to date.

A finding is one unhealthy symptom explained: its top cause (node and kind) is the grouping key, so ten red tiles
behind one renamed column are one incident with ten symptoms. Bounds (settings `incidents:`):
- at most `max_open` incidents open or acknowledged; a new cause past it is counted (`suppressed`), not opened;
- a cause that clears and comes back within `grouping_window_seconds` of its last change is a flap: counted on
  the incident (`flaps`), not listed in its timeline and not pushed, so a flapping condition makes no storm;
- one incident per cause for ever: a cause that comes back reopens its incident rather than opening another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ade_platform.lib.incidents.model import ACTIVE, IncidentState, incident_id


@dataclass(frozen=True)
class Policy:
    max_open: int = 50
    grouping_window_seconds: float = 600.0


@dataclass
class Finding:
    """One unhealthy symptom and the cause the root-cause engine ranked first for it."""

    node: str  # the cause's node
    cause: str  # the cause's kind (failed_model, schema_change, stale_source, ...)
    cause_detail: dict[str, Any]  # object, change, summary, system, name, onset, evidence_source
    symptom: dict[str, Any]  # node, kind, name, system, status
    verdict: str
    confidence: str
    systems: set[str] = field(
        default_factory=set
    )  # every system the chain touches (access, the `system` filter)
    chain: str = ""  # Mermaid: the symptom's chain up to the cause


@dataclass
class Reconciled:
    events: list[dict[str, Any]]
    suppressed: int  # new causes not opened: max_open was reached


def _merge(findings: list[Finding]) -> dict[str, dict[str, Any]]:
    """key -> what one incident says: the symptoms of every finding with that cause."""
    grouped: dict[str, dict[str, Any]] = {}
    for f in sorted(findings, key=lambda f: (f.node, f.cause, f.symptom.get("node") or "")):
        ident = incident_id(f.node, f.cause)
        g = grouped.setdefault(
            ident,
            {
                "key": {"node": f.node, "cause": f.cause},
                "cause": {"node": f.node, "cause": f.cause, **f.cause_detail},
                "verdict": f.verdict,
                "confidence": f.confidence,
                "symptoms": [],
                "systems": set(),
                "chain": f.chain,
            },
        )
        if all(s.get("node") != f.symptom.get("node") for s in g["symptoms"]):
            g["symptoms"].append(f.symptom)
        g["systems"] |= f.systems
    for g in grouped.values():
        g["systems"] = sorted(g["systems"])
    return grouped


def _differs(inc: dict[str, Any], g: dict[str, Any]) -> bool:
    said = {s.get("node"): s.get("status") for s in inc.get("symptoms") or []}
    now = {s.get("node"): s.get("status") for s in g["symptoms"]}
    return said != now or inc.get("verdict") != g["verdict"]


def reconcile(state: IncidentState, findings: list[Finding], at: float, policy: Policy) -> Reconciled:
    """The events (without seq) that bring `state` in line with `findings`, seen at `at` by detection."""
    events: list[dict[str, Any]] = []
    grouped = _merge(findings)
    open_now = len(state.active())
    suppressed = 0

    def add(ident: str, kind: str, data: dict[str, Any] | None = None) -> None:
        events.append(
            {"incident": ident, "type": kind, "at": at, "by": "ade", "note": "", "data": data or {}}
        )

    def flap(inc: dict[str, Any]) -> bool:
        """A change within the grouping window of the incident's last one."""
        changes = [
            e["at"] for e in inc["timeline"] if e["event"] in ("opened", "cause_cleared", "cause_returned")
        ]
        if inc.get("last_flap_at") is not None:
            changes.append(inc["last_flap_at"])
        return bool(changes) and at - max(changes) < policy.grouping_window_seconds

    for ident, g in grouped.items():
        inc = state.incidents.get(ident)
        body = {k: g[k] for k in ("key", "cause", "verdict", "confidence", "symptoms", "systems", "chain")}
        if inc is None:
            if open_now >= policy.max_open:
                suppressed += 1
                continue
            add(ident, "opened", body)
            open_now += 1
            continue
        status = inc["status"]
        if status == "resolved" and inc.get("cleared_since_resolved"):
            if open_now >= policy.max_open:
                suppressed += 1
                continue
            add(ident, "reopened", {"cause_returned": True})
            add(ident, "updated", body)
            open_now += 1
            continue
        if not inc["cause_present"]:
            add(ident, "cause_returned", {"flap": flap(inc)})
        if status in ACTIVE and _differs(inc, g):
            add(ident, "updated", body)
    for ident, inc in state.incidents.items():
        if ident not in grouped and inc["cause_present"]:
            add(ident, "cause_cleared", {"flap": flap(inc)})
    return Reconciled(events, suppressed)
