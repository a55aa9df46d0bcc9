"""incidents: incidents as objects (the spec's Gap 2): one per root cause, grouped by the incidents sensor from
what the store shows, with a lifecycle people drive (acknowledge, resolve, reopen, not an incident) and push to
listening agents (`mcp_bridge/push.py`) and to people (webhooks). The state is the store's incident journal, so
every replica answers alike. docs/INCIDENTS.md."""

from __future__ import annotations

import json

from fastmcp import FastMCP
from fastmcp.exceptions import ResourceError

from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.incidents.service import IncidentService
from mcp_bridge.toolsets.incidents.tools import IncidentTools

OPEN_URI = "ade://incidents/open"
ONE_URI = "ade://incidents/{incident_id}"
INSTRUCTIONS = (
    "Incidents: one per root cause, with the symptoms it reaches and a lifecycle (open, acknowledged, resolved, "
    f"not_an_incident). Subscribe to {OPEN_URI} to be told when one opens, changes or resolves."
)


def build(ctx: BridgeContext) -> FastMCP:
    service = IncidentService(ctx)
    server = new_toolset("incidents", INSTRUCTIONS, IncidentTools(service))

    def open_incidents() -> str:
        answer = service.list("active", None, None, 500, None)
        return json.dumps(answer, default=str)

    def one(incident_id: str) -> str:
        try:
            return json.dumps(service.get(incident_id), default=str)
        except ToolFailure as exc:
            raise ResourceError(exc.detail) from None

    server.resource(
        OPEN_URI,
        name="incidents-open",
        description="Open and acknowledged incidents (JSON); subscribe to hear of changes.",
        mime_type="application/json",
    )(open_incidents)
    server.resource(
        ONE_URI,
        name="incident",
        description="One incident (JSON), as incident_get.",
        mime_type="application/json",
    )(one)
    server.incident_service = service  # type: ignore[attr-defined]  # the gateway's push reads through it
    return server


__all__ = ["ONE_URI", "OPEN_URI", "build"]
