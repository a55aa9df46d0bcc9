"""dbt-cloud: dbt Cloud jobs, runs and artifacts through the Administrative API v2 (spec category 3).

Cached (from Dagster's snapshots, with provenance) for tracked jobs: dbtcloud_list_jobs (the configured project),
dbtcloud_get_last_run, dbtcloud_get_source_freshness; live otherwise. Live calls are audited Dagster runs:
dbtcloud_trigger_job runs as one (tags: tool, arguments, cause); read-only calls take the fast path. Long answers
stay bounded: dbtcloud_poll_run reports progress while it waits and returns `timed_out: true` at its timeout;
dbtcloud_fetch_artifact inlines an artifact up to `dbt_cloud.max_artifact_bytes` and otherwise returns a summary and
the `dbtcloud://runs/{run_id}/artifacts/{name}` resource of the whole file. The API token never leaves the client.

`tools.py` holds what an agent sees (parameters, descriptions), `service.py` what the tools do, and
`schemas/dbt_cloud.py` the answers' shapes.
"""

from __future__ import annotations

from fastmcp import FastMCP

from mcp_bridge.context import BridgeContext
from mcp_bridge.toolsets.base import new_toolset
from mcp_bridge.toolsets.dbt_cloud.service import RESOURCE_URI, DbtCloudService
from mcp_bridge.toolsets.dbt_cloud.tools import DbtCloudTools

INSTRUCTIONS = (
    "dbt Cloud jobs, runs and artifacts (Administrative API v2): trigger a job, wait for its run, read its "
    "artifacts and source freshness. Tracked jobs answer from Dagster's snapshots."
)


def build(ctx: BridgeContext) -> FastMCP:
    tools = DbtCloudTools(DbtCloudService(ctx))
    server = new_toolset("dbt-cloud", INSTRUCTIONS, tools)
    server.resource(
        RESOURCE_URI,
        name="dbtcloud-run-artifact",
        description="The whole artifact file of a dbt Cloud run (JSON), however large.",
        mime_type="application/json",
    )(tools.run_artifact)
    return server
