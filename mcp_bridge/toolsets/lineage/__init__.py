"""lineage: one question across the stack — which tables a tile reads, which dbt models build them, from which
sources, which job or DAG runs each, how every hop is doing, and what broke (the spec's Gap 1).

The graph comes from the `cross_stack_lineage` asset (an adjacency index memoized per version). lineage_trace
stamps each hop with health from the newest run-level snapshots. lineage_explain_incident and
lineage_what_changed start from the symptom as it is now: they probe it and the hops nearest to it live, within
`lineage.live_budget_ms`, as one audited read-only run, and fall back to the snapshots for what the budget did
not reach, saying so; onsets come from the snapshot history.
"""

from __future__ import annotations

import threading
from typing import Any

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.lineage.tools import PARAMETERS, LineageTools

INSTRUCTIONS = (
    "Cross-stack lineage: dashboard tile -> warehouse table -> dbt model -> source, and the dbt Cloud job, "
    "Airflow DAG, Prefect deployment or Dagster job that builds each model, with each hop's latest health; "
    "the ranked root cause of an incident and what changed along the chain."
)


class DeferredService:
    """The lineage service, built at its first use: its module loads the whole explain engine (~0.15 s), which
    the tool list does not need. A warm-up after the first listing builds it, so the first call does not wait."""

    def __init__(self, ctx: BridgeContext):
        self._ctx = ctx
        self._service: Any = None
        self._lock = threading.Lock()

    def built(self) -> Any:
        if self._service is None:
            with self._lock:
                if self._service is None:
                    from mcp_bridge.toolsets.lineage.service import LineageService

                    self._service = LineageService(self._ctx)
        return self._service

    def __getattr__(self, name: str) -> Any:
        return getattr(self.built(), name)


def build(ctx: BridgeContext) -> FastMCP:
    service = DeferredService(ctx)
    server = new_toolset("lineage", INSTRUCTIONS, LineageTools(service), parameters=PARAMETERS)  # type: ignore[arg-type]
    server.warm_ups.append(service.built)  # type: ignore[attr-defined]
    return server
