"""What the incident tools and resources do: read the store's incident journal (the state every replica and the
daemon share), show each caller only the incidents whose symptoms reach a toolset it may read, and record a
person's transition as an audited run (and send the webhooks that listen to it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ade_platform.lib import paging
from ade_platform.lib.caller import Caller, current_caller
from ade_platform.lib.incidents.model import IncidentState, public, transition
from ade_platform.lib.incidents.webhooks import notify
from ade_platform.lib.lineage.conditions import iso
from ade_platform.store.incidents import IncidentJournal
from mcp_bridge.access import AccessPolicy
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure

# The toolset that reads each system a symptom can be in: who may hear of an incident (docs/INCIDENTS.md).
SYSTEM_TOOLSETS = {
    "looker": "bi-api",
    "metabase": "bi-api",
    "warehouse": "warehouse",
    "dbt": "dbt-artifacts",
    "dbt_cloud": "dbt-cloud",
    "airflow": "orchestrator",
    "prefect": "orchestrator",
    "dagster": "orchestrator",
    "snowflake": "snowflake",
}
_TIMES = ("opened_at", "updated_at", "resolved_at", "cause_cleared_at")


def reaches(inc: dict[str, Any]) -> set[str]:
    """The toolsets an incident's symptoms are read through."""
    return {
        SYSTEM_TOOLSETS.get(str(s.get("system")), str(s.get("system"))) for s in inc.get("symptoms") or []
    }


def shown(inc: dict[str, Any], full: bool) -> dict[str, Any]:
    out = public(inc)
    for key in _TIMES:
        out[key] = iso(out.get(key))
    if not full:
        for key in ("symptoms", "timeline", "chain", "cause"):
            out.pop(key, None)
        out["cause"] = {k: inc["cause"].get(k) for k in ("node", "cause", "object", "change")}
        return out
    out["timeline"] = [{**e, "at": iso(e["at"])} for e in inc["timeline"]]
    if out.get("feedback"):
        out["feedback"] = {**out["feedback"], "at": iso(out["feedback"]["at"])}
    return out


class IncidentService:
    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.journal = IncidentJournal(ctx.reader.root)
        self.policy = AccessPolicy(ctx.settings.mcp.access)
        self.webhooks = ctx.settings.incidents.webhooks

    # ---- who sees what ----------------------------------------------------------------------------------
    def visible_to(self, caller: Caller) -> Callable[[dict[str, Any]], bool]:
        """Signed-in callers (auth: oidc) see an incident when a toolset its symptoms reach is one their roles
        read; stdio and the shared token see every incident, as they see every tool."""
        if not caller.signed_in:
            return lambda _inc: True
        roles = self.policy.roles(caller)
        return lambda inc: any(self.policy.allows(roles, "read", toolset) for toolset in reaches(inc))

    def state(self) -> IncidentState:
        return self.journal.state()

    def provenance(self, state: IncidentState) -> dict[str, Any]:
        newest = max((i["updated_at"] for i in state.incidents.values()), default=None)
        return {
            "source": "cache",
            "asset": "incidents",
            "version": str(state.seq),
            "materialized_at": iso(newest),
            "age_seconds": round(time.time() - newest, 1) if newest else 0.0,
        }

    def _one(self, state: IncidentState, ident: str) -> dict[str, Any]:
        inc = state.incidents.get(ident)
        if inc is None or not self.visible_to(current_caller())(inc):  # not yours is not found: no probing
            raise ToolFailure("incident_not_found", f"no incident {ident[:64]!r}")
        return inc

    # ---- the answers ------------------------------------------------------------------------------------
    def list(
        self,
        status: str | None,
        system: str | None,
        since: str | None,
        limit: int | None,
        cursor: str | None,
    ) -> dict[str, Any]:
        state = self.state()
        visible = self.visible_to(current_caller())
        wanted = {"active": ["open", "acknowledged"]}.get(status or "", status)
        keep_status = paging.state_matcher(wanted)
        in_window = paging.window_matcher(since, None, time.time())
        items = sorted(
            (
                inc
                for inc in state.incidents.values()
                if visible(inc)
                and keep_status(inc["status"])
                and (system is None or system in inc["systems"] or system in reaches(inc))
                and in_window(inc["updated_at"])
            ),
            key=lambda i: (-i["updated_at"], i["id"]),
        )
        body = {"incidents": [shown(i, full=False) for i in items]}
        answer = paging.page_answer(
            body,
            "incidents",
            limit,
            cursor,
            query=("incident_list", status, system, since),
            item_key=lambda i: (i["id"], i["revision"]),
        )
        return {**answer, "provenance": self.provenance(state)}

    def get(self, ident: str) -> dict[str, Any]:
        state = self.state()
        return {**shown(self._one(state, ident), full=True), "provenance": self.provenance(state)}

    def update(
        self, ident: str, action: str, note: str | None, cause_was_right: bool | None
    ) -> dict[str, Any]:
        caller = current_caller()
        state = self.state()
        self._one(state, ident)
        # refused before the audited run, so a transition that cannot apply records nothing; under the journal's
        # lock it is decided again against the state then (another person may have acted in between)
        transition(
            state, ident, action, by=caller.user, note=note, cause_was_right=cause_was_right, at=time.time()
        )

        def record() -> list[dict[str, Any]]:
            return self.journal.change(
                lambda state: [
                    transition(
                        state, ident, action, by=caller.user, note=note, cause_was_right=cause_was_right,
                        at=time.time(),
                    )
                ]
            )  # fmt: skip

        arguments = {"incident_id": ident, "action": action, "cause_was_right": cause_was_right}
        result = self.ctx.live().run("incident_update", record, arguments=arguments, effects="workspace")
        state = self.state()
        notify(self.webhooks, result.value, state)
        prov = {**self.provenance(state), "source": "live", "run_id": result.run_id}
        return {**shown(state.incidents[ident], full=True), "provenance": prov}
