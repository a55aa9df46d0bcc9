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

JobId = Annotated[int, Field(ge=1)]
RunId = Annotated[int, Field(ge=1)]
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
                description="Why: shown in dbt Cloud and the audit trail.",
            ),
        ],
        steps_override: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=MAX_STEP_CHARS)]] | None,
            Field(
                max_length=MAX_STEPS,
                description="dbt commands replacing the job's steps (['dbt run -s x+']): build, run, test, seed, "
                "snapshot, compile, source freshness, docs generate, with selection and behaviour flags; anything "
                "else is refused.",
            ),
        ] = None,
    ) -> TriggerAnswer:
        """Trigger a dbt Cloud job run and return its run id at once (follow it with dbtcloud_poll_run).
        Allow-listed jobs only; recorded as an audited run."""
        return await self.service.trigger(job_id, cause, steps_override)

    @tool(READ_ONLY_OPEN_WORLD, task=True)
    async def dbtcloud_poll_run(
        self,
        run_id: RunId,
        context: Context,
        timeout_seconds: Annotated[
            int, Field(ge=0, le=86_400, description="Longest wait; then the state with timed_out.")
        ] = 1800,
    ) -> PollAnswer:
        """Wait for a dbt Cloud run to finish (success, error or cancelled) or the timeout, sending progress
        notifications. Returns its state and step durations."""
        return await self.service.poll(run_id, timeout_seconds, context.report_progress)

    @tool(READ_ONLY_OPEN_WORLD)
    async def dbtcloud_get_last_run(
        self,
        job_id: JobId,
        status: Annotated[
            str | None,
            Field(max_length=20, description="Success, Error, Cancelled, or null: any."),
        ] = "Success",
    ) -> LastRunAnswer:
        """The latest run of a dbt Cloud job with a status (default Success): when it ran, how it ended, why.
        From Dagster's snapshot when it holds that run, else dbt Cloud."""
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
                description="JMESPath on the artifact; its value comes back as `result`: "
                "results[?status!='error'].unique_id",
            ),
        ] = None,
    ) -> ArtifactAnswer:
        """A dbt artifact (manifest, catalog, run_results, sources) of a dbt Cloud run, or only a JMESPath
        `query`'s value. Inline up to a size cap, else a summary and its resource URI."""
        return await self.service.fetch_artifact(run_id, artifact, query)

    async def run_artifact(self, run_id: str, name: str) -> str:
        return await self.service.artifact_text(run_id, name)

    @tool(READ_ONLY_OPEN_WORLD)
    async def dbtcloud_list_jobs(
        self,
        project_id: Annotated[int, Field(ge=1)],
        environment_id: Annotated[int | None, Field(ge=1)] = None,
        name_pattern: NamePattern = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> JobsAnswer:
        """The dbt Cloud project's jobs with steps, schedule, environment and freshness settings; from Dagster's
        snapshot when dbt Cloud lists the same jobs. Paged list `jobs`."""
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
        state: Literal["pass", "warn", "error", "runtime error"] | None = None,
        name_pattern: NamePattern = None,
        limit: Limit = None,
        cursor: Cursor = None,
    ) -> FreshnessAnswer:
        """dbt source freshness (pass/warn/error, newest load, age) from the latest completed freshness run of a
        dbt Cloud job. Paged; state filters on status."""
        answer = await self.service.source_freshness(job_id)
        in_state, named = paging.state_matcher(state), paging.name_matcher(name_pattern)
        query = ("dbtcloud_get_source_freshness", job_id, state, name_pattern)
        return paging.page_answer(  # type: ignore[return-value]
            dict(answer), "sources", limit, cursor, query=query,
            item_key=lambda s: (answer["run_id"], s["unique_id"]),
            keep=lambda s: in_state(s.get("status")) and named(s.get("table_name")),
        )  # fmt: skip
