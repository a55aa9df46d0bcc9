"""The incident tools as an agent sees them. The service does the work."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from mcp_bridge.toolsets.base import READ_ONLY, tool
from mcp_bridge.toolsets.incidents.service import IncidentService
from mcp_bridge.toolsets.schemas.incidents import IncidentAnswer, IncidentListAnswer
from mcp_bridge.toolsets.schemas.paging import Cursor, Limit, Since

IncidentId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")]
UPDATE = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False)


class IncidentTools:
    def __init__(self, service: IncidentService):
        self.service = service

    @tool(READ_ONLY, answer=IncidentListAnswer)
    def incident_list(
        self,
        status: Literal["active", "open", "acknowledged", "resolved", "not_an_incident"] | None = None,
        system: Annotated[
            str | None, Field(max_length=64, description="looker, dbt, warehouse, airflow...")
        ] = None,
        since: Since = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> dict:
        """Incidents (one per root cause), newest change first: status, verdict, cause, symptom count.

        active = open or acknowledged. Paged (docs/PAGING.md)."""
        return self.service.list(status, system, since, limit, cursor)

    @tool(READ_ONLY, answer=IncidentAnswer)
    def incident_get(self, incident_id: IncidentId) -> dict:
        """One incident: cause, every symptom (tiles, models, jobs), verdict, timeline with who and why, chain."""
        return self.service.get(incident_id)

    @tool(UPDATE, answer=IncidentAnswer)
    def incident_update(
        self,
        incident_id: IncidentId,
        action: Literal["acknowledge", "resolve", "reopen", "not_an_incident"],
        note: Annotated[str | None, Field(max_length=2000, description="Why; kept in the timeline.")] = None,
        cause_was_right: Annotated[
            bool | None, Field(description="On resolve: was the named cause the real one (teaches ranking).")
        ] = None,
    ) -> dict:
        """Acknowledge, resolve, reopen or dismiss an incident; audited, pushed to listeners and webhooks."""
        return self.service.update(incident_id, action, note, cause_was_right)
