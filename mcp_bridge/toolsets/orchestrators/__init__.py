"""orchestrator: runs, tasks and logs of Airflow, Prefect and the platform's own Dagster (spec category 4).

`backend` takes the spec's "airflow" | "prefect" and, beyond the spec, "dagster": this platform's instance (its
jobs, schedules and the audited `live__*` runs of agents' calls), so the demo answers with no other server.
Reads are live: on Airflow and Prefect audited in the background like every read-only live tool; on Dagster
without an audit run (they read the audit trail itself, and would add a run to it at every look). get_last_run and get_run_history
answer from the `orchestrator_runs_<backend>` snapshot for tracked DAGs when it holds the answer.
orchestrator_trigger_dag is an audited Dagster run that starts the DAG run (Airflow), a flow run of the
deployment (Prefect) or submits a run of the platform's job to its instance (Dagster: the daemon launches it, never
this process); only allow-listed DAGs, with a bounded conf (ade_platform/lib/orchestrators/trigger_policy.py).
orchestrator_detect_patterns works on the text given, offline.
Spec tools that return a list return an object here, the list under a named key.

The package is named for the concept (`orchestrators:` in ade.yaml); the server keeps the spec's name. `tools.py`
holds what an agent sees, `service.py` what the tools do, `schemas/orchestrators.py` the answers' shapes.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.orchestrators.service import OrchestratorService
from mcp_bridge.toolsets.orchestrators.tools import PARAMETERS, OrchestratorTools

INSTRUCTIONS = (
    "Runs, tasks and logs of Airflow, Prefect and this platform's own Dagster (backend: dagster): find the "
    "failed run, the failed task, its log and the matched failure signature; trigger a run."
)


def build(ctx: BridgeContext) -> FastMCP:
    return new_toolset(
        "orchestrator", INSTRUCTIONS, OrchestratorTools(OrchestratorService(ctx)), parameters=PARAMETERS
    )
