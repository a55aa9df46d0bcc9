"""Output shapes of the incidents toolset: incident_list, incident_get, incident_update."""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from ade_platform.lib.shapes import OpenShape
from mcp_bridge.toolsets.schemas.paging import Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance

Status = Literal["open", "acknowledged", "resolved", "not_an_incident"]


class IncidentCause(OpenShape):
    node: str
    cause: str
    object: NotRequired[str | None]
    change: NotRequired[str | None]


class IncidentSummary(OpenShape):
    id: str
    status: Status
    verdict: str
    confidence: str
    cause: IncidentCause
    symptoms_total: int
    systems: list[str]
    opened_at: str | None
    updated_at: str | None
    cause_present: bool
    reopened: int
    revision: int


class TimelineEntry(OpenShape):
    at: str | None
    event: str
    by: str
    note: NotRequired[str]


class Symptom(OpenShape):
    node: str
    kind: str | None
    name: str | None
    system: str | None
    status: str


class IncidentAnswer(IncidentSummary):
    symptoms: list[Symptom]
    timeline: list[TimelineEntry]
    chain: str
    feedback: dict[str, Any] | None
    provenance: Provenance


class IncidentListAnswer(Paged):
    incidents: list[IncidentSummary]
    total: int | None
    provenance: Provenance
