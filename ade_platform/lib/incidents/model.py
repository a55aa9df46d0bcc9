"""Incidents as objects: one per root cause (the top cause's node and kind), with the symptoms it reaches, a
lifecycle and a timeline. The state is a fold of an append-only list of events (store/incidents.py keeps them),
so concurrent writers only ever add events and no transition is lost.

Lifecycle: open -> acknowledged -> resolved | not_an_incident; a person may reopen a closed one, and detection
reopens a resolved one when its cause comes back (it must have been seen cleared after the resolution: resolving
while the store still shows the cause does not bounce back at the next tick). Detection never resolves: it marks
the cause cleared in the timeline and leaves the decision to people. `not_an_incident` stays closed; a cause
that comes back is only noted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ade_platform.lib.errors import CodedError

STATUSES = ("open", "acknowledged", "resolved", "not_an_incident")
ACTIVE = frozenset({"open", "acknowledged"})
# action -> (the statuses it may start from, the status it leads to, the event it records)
ACTIONS: dict[str, tuple[frozenset[str], str, str]] = {
    "acknowledge": (frozenset({"open"}), "acknowledged", "acknowledged"),
    "resolve": (ACTIVE, "resolved", "resolved"),
    "not_an_incident": (ACTIVE, "not_an_incident", "not_an_incident"),
    "reopen": (frozenset({"resolved", "not_an_incident"}), "open", "reopened"),
}
MAX_TIMELINE = 100  # entries kept per incident: the first (opened) and the newest
MAX_SYMPTOMS = 200  # symptoms kept per incident (`symptoms_total` counts them all)
MAX_NOTE = 2000


class IncidentError(CodedError):
    """incident_not_found, invalid_transition, invalid_incident_action."""

    hints = {
        "incident_not_found": "List incidents with incident_list; ids look like inc-<12 hex>.",
        "invalid_transition": "Read the incident's status with incident_get; see docs/INCIDENTS.md (lifecycle).",
    }


def incident_id(node: str, cause: str) -> str:
    """The same cause (node and kind) is always the same incident: every detector names it alike."""
    return "inc-" + hashlib.sha256(f"{node}\x00{cause}".encode()).hexdigest()[:12]


@dataclass
class IncidentState:
    """Every incident, folded from the journal; `seq` is the newest event applied (the state's revision)."""

    incidents: dict[str, dict[str, Any]]
    seq: int = 0

    @classmethod
    def empty(cls) -> IncidentState:
        return cls({}, 0)

    def get(self, incident: str) -> dict[str, Any]:
        found = self.incidents.get(incident)
        if found is None:
            raise IncidentError("incident_not_found", f"no incident {incident[:64]!r}")
        return found

    def active(self) -> list[dict[str, Any]]:
        return [i for i in self.incidents.values() if i["status"] in ACTIVE]

    def to_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "incidents": self.incidents}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IncidentState:
        return cls(dict(data.get("incidents") or {}), int(data.get("seq") or 0))


def fold(state: IncidentState, events: Iterable[dict[str, Any]]) -> IncidentState:
    """Apply events (in journal order) to the state; an event at or before the state's revision is skipped."""
    for event in events:
        if event.get("seq", 0) <= state.seq:
            continue
        apply(state, event)
        state.seq = event["seq"]
    return state


def _entry(event: dict[str, Any], **extra: Any) -> dict[str, Any]:
    entry = {"at": event["at"], "event": event["type"], "by": event.get("by") or "ade"}
    if event.get("note"):
        entry["note"] = event["note"]
    return {**entry, **extra}


def _timeline_add(inc: dict[str, Any], entry: dict[str, Any]) -> None:
    timeline = inc["timeline"]
    timeline.append(entry)
    if len(timeline) > MAX_TIMELINE:  # keep how it began, and the newest
        del timeline[1 : len(timeline) - MAX_TIMELINE + 1]
        inc["timeline_dropped"] = inc.get("timeline_dropped", 0) + 1


def _finding_fields(data: dict[str, Any]) -> dict[str, Any]:
    symptoms = list(data.get("symptoms") or [])
    return {
        "cause": data.get("cause") or {},
        "verdict": data.get("verdict") or "",
        "confidence": data.get("confidence") or "none",
        "symptoms": symptoms[:MAX_SYMPTOMS],
        "symptoms_total": len(symptoms),
        "systems": sorted(set(data.get("systems") or [])),
        "chain": data.get("chain") or "",
    }


def apply(state: IncidentState, event: dict[str, Any]) -> None:
    kind, at, ident = event["type"], event["at"], event["incident"]
    data = event.get("data") or {}
    inc = state.incidents.get(ident)
    if kind == "opened":
        if inc is not None:  # two detectors opened it at once: the second is an update
            kind = "updated"
        else:
            state.incidents[ident] = {
                "id": ident,
                "key": data.get("key") or {},
                "status": "open",
                "opened_at": at,
                "updated_at": at,
                "revision": event["seq"],
                "cause_present": True,
                "cause_cleared_at": None,
                "cleared_since_resolved": False,
                "reopened": 0,
                "flaps": 0,
                "last_flap_at": None,
                "acknowledged_by": None,
                "resolved_at": None,
                "feedback": None,
                "timeline": [],
                **_finding_fields(data),
            }
            _timeline_add(state.incidents[ident], _entry(event, verdict=data.get("verdict")))
            return
    if inc is None:
        return  # an event of an incident compacted away
    inc["updated_at"] = at
    inc["revision"] = event["seq"]
    if kind == "updated":
        inc.update(_finding_fields(data))
        _timeline_add(inc, _entry(event, symptoms=inc["symptoms_total"]))
    elif kind in ("cause_cleared", "cause_returned"):
        present = kind == "cause_returned"
        inc["cause_present"] = present
        if not present:
            inc["cause_cleared_at"] = at
            if inc["status"] == "resolved":
                inc["cleared_since_resolved"] = True
        if data.get("flap"):  # within the grouping window of the last change: counted, not listed
            inc["flaps"] += 1
            inc["last_flap_at"] = at
        else:
            _timeline_add(inc, _entry(event))
    else:
        status = {"acknowledged": "acknowledged", "resolved": "resolved", "reopened": "open"}.get(
            kind, "not_an_incident" if kind == "not_an_incident" else None
        )
        if status is None:
            return
        inc["status"] = status
        extra: dict[str, Any] = {}
        if kind == "acknowledged":
            inc["acknowledged_by"] = event.get("by")
        if kind in ("resolved", "not_an_incident"):
            inc["resolved_at"] = at
            inc["cleared_since_resolved"] = not inc["cause_present"]
            if data.get("cause_was_right") is not None:
                inc["feedback"] = {
                    "cause_was_right": bool(data["cause_was_right"]),
                    "by": event.get("by"),
                    "at": at,
                }
                extra["cause_was_right"] = bool(data["cause_was_right"])
        if kind == "reopened":
            inc["reopened"] += 1
            inc["resolved_at"] = None
            inc["cleared_since_resolved"] = False
            if data.get("cause_returned"):
                inc["cause_present"] = True
                extra["cause_returned"] = True
        _timeline_add(inc, _entry(event, **extra))


def transition(
    state: IncidentState,
    ident: str,
    action: str,
    *,
    by: str,
    note: str | None = None,
    cause_was_right: bool | None = None,
    at: float,
) -> dict[str, Any]:
    """The event a person's action records, or IncidentError when the incident cannot take it now."""
    if action not in ACTIONS:
        raise IncidentError(
            "invalid_incident_action", f"unknown action {action[:40]!r}; one of {', '.join(ACTIONS)}"
        )
    inc = state.get(ident)
    allowed, _, kind = ACTIONS[action]
    if inc["status"] not in allowed:
        raise IncidentError(
            "invalid_transition",
            f"{ident} is {inc['status']}: {action} applies to {' or '.join(sorted(allowed))} incidents",
            status=inc["status"],
        )
    data: dict[str, Any] = {}
    if cause_was_right is not None:
        if action not in ("resolve", "not_an_incident"):
            raise IncidentError(
                "invalid_transition",
                "cause_was_right is recorded when resolving (resolve or not_an_incident)",
            )
        data["cause_was_right"] = cause_was_right
    return {
        "incident": ident,
        "type": kind,
        "at": at,
        "by": by,
        "note": (note or "")[:MAX_NOTE],
        "data": data,
    }


def feedback_of(state: IncidentState) -> Any:
    """The ranking's Feedback from every incident resolved with `cause_was_right` (None when there is none)."""
    from ade_platform.lib.lineage.incident import Feedback

    kinds: dict[str, list[int]] = {}
    nodes: dict[str, list[int]] = {}
    for inc in state.incidents.values():
        said = inc.get("feedback")
        if not said:
            continue
        slot = 0 if said["cause_was_right"] else 1
        kinds.setdefault(inc["key"].get("cause", ""), [0, 0])[slot] += 1
        nodes.setdefault(inc["key"].get("node", ""), [0, 0])[slot] += 1
    if not kinds:
        return None
    return Feedback({k: (r, w) for k, (r, w) in kinds.items()}, {k: (r, w) for k, (r, w) in nodes.items()})


def public(inc: dict[str, Any]) -> dict[str, Any]:
    """An incident as the tools, resources, webhooks and `ade status` show it (bookkeeping left out)."""
    hidden = {"cleared_since_resolved", "last_flap_at"}
    return {k: v for k, v in inc.items() if k not in hidden}
