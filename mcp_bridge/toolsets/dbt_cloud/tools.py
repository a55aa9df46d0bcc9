"""The dbt-cloud tools as an agent sees them: parameters, descriptions, answer shapes. The service does the work."""

from __future__ import annotations

from typing import Annotated, Literal

from fastmcp import Context
from pydantic import Field

from ade_platform.lib import dbt_cloud as lib
from ade_platform.lib import json_query, paging
from ade_platform.lib.dbt.command_policy import MAX_STEP_CHARS, MAX_STEPS
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD, TRIGGER, tool
from mcp_bridge.toolsets.dbt_cloud.service import DbtCloudService
from mcp_bridge.toolsets.schemas.dbt_cloud import (
    ArtifactAnswer,
    FreshnessAnswer,
    JobsAnswer,
    LastRunAnswer,
    PollAnswer,
    TriggerAnswer,
)
from mcp_bridge.toolsets.schemas.paging import Cursor, Limit, NamePattern

# dbt Cloud keeps 255 characters of a cause; ADE appends its mark to an agent's (lib.AGENT_CAUSE_MARK).
CAUSE_MAX_CHARS = 255 - len(lib.AGENT_CAUSE_MARK)

JobId = Annotated[int, Field(ge=1, description="The dbt Cloud job ID.")]
RunId = Annotated[int, Field(ge=1, description="The dbt Cloud run ID.")]
ArtifactName = Literal["manifest.json", "catalog.json", "run_results.json", "sources.json"]


class DbtCloudTools:
    def __init__(self, service: DbtCloudService):
        self.service = service

    @tool(TRIGGER)
    async def dbtcloud_trigger_job(
        self,
        job_id: JobId,
        cause: Annotated[
            str,
            Field(
                min_length=1,
                max_length=CAUSE_MAX_CHARS,
                description="Why the run is triggered; shown in dbt Cloud's run history and the audit trail.",
            ),
        ],
        steps_override: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_STEP_CHARS)]] | None,
            Field(
                max_length=MAX_STEPS,
                description="dbt commands replacing the job's steps, e.g. ['dbt run -s x+']: build, run, test, "
                "seed, snapshot, compile, source freshness or docs generate with selection and behaviour options "
                "(--select/-s, --exclude, --selector, --resource-type, --fail-fast, --defer, --state, "
                "--favor-state, --threads, --warn-error); anything else is refused. An agent's override run "
                "never feeds the dbt tools' manifest, run results or freshness.",
            ),
        ] = None,
    ) -> TriggerAnswer:
        """Trigger a dbt Cloud job run and return its run id at once (use dbtcloud_poll_run to wait). Only
        allow-listed jobs (dbt_cloud.triggerable_jobs, by default the tracked ones). Runs as an audited Dagster
        run tagged with the job, the cause and the steps override."""
        return await self.service.trigger(job_id, cause, steps_override)

    @tool(READ_ONLY_OPEN_WORLD, task=True)
    async def dbtcloud_poll_run(
        self,
        run_id: RunId,
        context: Context,
        timeout_seconds: Annotated[
            int, Field(ge=0, le=86_400, description="Longest wait; past it the current state with timed_out.")
        ] = 1800,
    ) -> PollAnswer:
        """Wait until a dbt Cloud run is success, error or cancelled (or the timeout passes), checking its status
        every dbt_cloud.poll_interval_seconds and sending progress notifications meanwhile. Returns the run's
        state with per-step durations."""
        return await self.service.poll(run_id, timeout_seconds, context.report_progress)

    @tool(READ_ONLY_OPEN_WORLD)
    async def dbtcloud_get_last_run(
        self,
        job_id: JobId,
        status: Annotated[
            str | None,
            Field(max_length=20, description="Success (default), Error, Cancelled, or null for any status."),
        ] = "Success",
    ) -> LastRunAnswer:
        """The most recent run of a job with the given status: whether it succeeded recently, when, why it ran.
        One call to dbt Cloud checks for the newest matching run: a tracked job answers from Dagster's
        dbt_cloud_runs snapshot when it holds that run, from dbt Cloud otherwise; when dbt Cloud cannot be reached
        the snapshot answers with provenance.stale and the reason."""
        return await self.service.last_run(job_id, status)

    @tool(READ_ONLY_OPEN_WORLD)
    async def dbtcloud_fetch_artifact(
        self,
        run_id: RunId,
        artifact: ArtifactName,
        query: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=json_query.MAX_EXPRESSION_CHARS,
                description="A JMESPath expression (jmespath.org) evaluated on the artifact; its value comes back "
                "as `result` instead of the whole file, e.g. 'nodes.\"model.shop.orders\".depends_on' or "
                "\"results[?status!='success'].unique_id\".",
            ),
        ] = None,
    ) -> ArtifactAnswer:
        """A dbt artifact (manifest, catalog, run_results, sources) of a dbt Cloud run, its
        metadata.dbt_schema_version checked. Inlined up to dbt_cloud.max_artifact_bytes; a larger one comes as a
        summary (which says how to narrow) plus the resource URI of the whole file. With `query`, only the
        expression's value, under the same cap. `dbt_tools` names the dbt-artifacts tools that answer from this
        very file, when dbt_cloud.dbt_tools_job publishes it."""
        return await self.service.fetch_artifact(run_id, artifact, query)

    async def run_artifact(self, run_id: str, name: str) -> str:
        return await self.service.artifact_text(run_id, name)

    @tool(READ_ONLY_OPEN_WORLD)
    async def dbtcloud_list_jobs(
        self,
        project_id: Annotated[int, Field(ge=1, description="The dbt Cloud project ID.")],
        environment_id: Annotated[
            int | None, Field(ge=1, description="Only jobs of this environment; default all environments.")
        ] = None,
        name_pattern: NamePattern = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> JobsAnswer:
        """The project's jobs: steps, schedule, environment, docs and source freshness settings. The configured
        project answers from Dagster's dbt_cloud_jobs snapshot when dbt Cloud lists the same jobs, unchanged (one
        call checks), and when it holds every environment asked for; from dbt Cloud otherwise. The spec's list is
        under `jobs`, paged (limit, cursor -> next_cursor; docs/PAGING.md); name_pattern filters on the job
        name; count is the project's jobs, total the filtered ones."""
        answer = await self.service.list_jobs(project_id, environment_id)
        named = paging.name_matcher(name_pattern)
        query = ("dbtcloud_list_jobs", project_id, environment_id, name_pattern)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "jobs", limit, cursor, query=query, item_key=lambda j: j["job_id"],
            keep=lambda j: named(j.get("name")),
        )  # fmt: skip

    @tool(READ_ONLY_OPEN_WORLD)
    async def dbtcloud_get_source_freshness(
        self,
        job_id: JobId,
        state: Annotated[
            Literal["pass", "warn", "error", "runtime error"] | None,
            Field(description="Only sources with this freshness status."),
        ] = None,
        name_pattern: NamePattern = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> FreshnessAnswer:
        """Per-source freshness (pass/warn/error, newest load, age) from the sources.json of the most recent
        completed run of a job that runs source freshness (an agent's steps-override runs aside). Tracked jobs
        answer from Dagster's snapshot when that run is the one it read (one call checks); from dbt Cloud
        otherwise. Paged (limit, cursor -> next_cursor; docs/PAGING.md); state filters on status,
        name_pattern on table_name."""
        answer = await self.service.source_freshness(job_id)
        in_state, named = paging.state_matcher(state), paging.name_matcher(name_pattern)
        query = ("dbtcloud_get_source_freshness", job_id, state, name_pattern)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "sources", limit, cursor, query=query,
            item_key=lambda s: (answer["run_id"], s["unique_id"]),
            keep=lambda s: in_state(s.get("status")) and named(s.get("table_name")),
        )  # fmt: skip
