"""dbt-cloud: dbt Cloud jobs, runs and artifacts through the Administrative API v2 (spec category 3).

Cached (from Dagster's snapshots, with provenance) for tracked jobs: dbtcloud_list_jobs (the configured project),
dbtcloud_get_last_run, dbtcloud_get_source_freshness; live otherwise. Live calls are audited Dagster runs:
dbtcloud_trigger_job runs as one (tags: tool, arguments, cause); read-only calls take the fast path. Long answers
stay bounded: dbtcloud_poll_run reports progress while it waits and returns `timed_out: true` at its timeout;
dbtcloud_fetch_artifact inlines an artifact up to `dbt_cloud.max_artifact_bytes` and otherwise returns a summary and
the `dbtcloud://runs/{run_id}/artifacts/{name}` resource of the whole file. The API token never leaves the client.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
import orjson
from fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import Field
from typing_extensions import TypedDict

from ade_platform.lib import dbt_cloud as lib
from ade_platform.lib.dbt.command_policy import MAX_STEP_CHARS, MAX_STEPS
from ade_platform.lib.shapes import OPEN
from ade_platform.store import Snapshot, SnapshotNotFound
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.base import READ_ONLY_OPEN_WORLD, new_toolset

if TYPE_CHECKING:
    from ade_platform.clients.dbt_cloud import DbtCloudClient

T = TypeVar("T")
JOBS_ASSET = "dbt_cloud_jobs"
RUNS_ASSET = "dbt_cloud_runs"
FRESHNESS_ASSET = "dbt_cloud_freshness"
TRIGGER = ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=True)
RESOURCE_URI = "dbtcloud://runs/{run_id}/artifacts/{name}"
# dbt Cloud keeps 255 characters of a cause; ADE appends its mark to an agent's (lib.AGENT_CAUSE_MARK).
CAUSE_MAX_CHARS = 255 - len(lib.AGENT_CAUSE_MARK)

JobId = Annotated[int, Field(ge=1, description="The dbt Cloud job ID.")]
RunId = Annotated[int, Field(ge=1, description="The dbt Cloud run ID.")]
ArtifactName = Literal["manifest.json", "catalog.json", "run_results.json", "sources.json"]


class TriggerAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    run_id: int
    job_id: int
    status: str
    created_at: str | None
    href: str | None
    cause: str
    steps_override: list[str] | None
    provenance: dict[str, Any]


class StepAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    index: int | None
    name: str
    status: str
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None


class PollAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    run_id: int
    job_id: int | None
    status: str
    status_message: str | None
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None
    steps: list[StepAnswer]
    timed_out: bool
    status_checks: int
    waited_seconds: float
    href: str | None
    provenance: dict[str, Any]


class LastRunAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    run_id: int
    job_id: int
    status: str
    started_at: str | None
    finished_at: str | None
    duration_seconds: float | None
    triggered_by: str | None
    cause: str | None
    git_sha: str | None
    status_message: str | None
    href: str | None
    started_by_agent: bool
    steps_override: list[str] | None
    provenance: dict[str, Any]


class ArtifactAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    artifact: str
    run_id: int
    fetched_at: str
    size_bytes: int
    truncated: bool
    content: dict[str, Any] | None
    summary: dict[str, Any] | None
    resource_uri: str
    provenance: dict[str, Any]


class JobEntry(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    job_id: int
    name: str | None
    environment_id: int | None
    environment_name: str | None
    schedule_enabled: bool
    cron: str | None
    steps: list[str]
    generate_docs: bool
    run_source_freshness: bool
    tracked: bool


class JobsAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    project_id: int
    environment_id: int | None
    jobs: list[JobEntry]
    count: int
    provenance: dict[str, Any]


class SourceFreshness(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    unique_id: str
    source_name: str | None
    table_name: str | None
    status: str | None
    max_loaded_at: str | None
    snapshotted_at: str | None
    age_seconds: float | None
    error: str | None


class FreshnessAnswer(TypedDict):
    __pydantic_config__ = OPEN  # type: ignore[misc]
    job_id: int
    run_id: int
    run_status: str
    run_finished_at: str | None
    sources: list[SourceFreshness]
    provenance: dict[str, Any]


class DbtCloudService:
    """The configured account: one API client (built on first use) and the audited way to call it."""

    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.section = ctx.settings.dbt_cloud
        self._client: DbtCloudClient | None = None
        self._lock = threading.Lock()

    def client(self) -> DbtCloudClient:
        section = self.section
        if section is None:
            raise ToolFailure("dbt_cloud_not_configured", "no dbt_cloud: section in the configuration")
        if not section.api_token.get_secret_value():
            raise ToolFailure(
                "auth_failed",
                "dbt_cloud.api_token is empty",
                hint="Set the environment variable dbt_cloud.api_token references to a service token.",
            )
        with self._lock:
            if self._client is None:
                from ade_platform.clients.dbt_cloud import DbtCloudClient

                self._client = DbtCloudClient.from_settings(section)
            return self._client

    def check_trigger(self, job_id: int, steps_override: list[str] | None) -> list[str] | None:
        """Refuse, before any API call, a job off the allow-list or a steps override the policy does not allow;
        the steps to send otherwise, as the policy rendered them (what runs is what was checked)."""
        section = self.section
        if section is None:
            raise ToolFailure("dbt_cloud_not_configured", "no dbt_cloud: section in the configuration")
        try:
            return lib.checked_trigger(
                job_id,
                steps_override,
                triggerable=section.triggerable(),
                allow_steps_override=section.allow_steps_override,
                allow_full_refresh=section.allow_full_refresh,
                secret=section.api_token.get_secret_value(),
            )
        except lib.TriggerRefused as exc:
            raise ToolFailure(exc.code, exc.detail, exc.hint, **exc.extra) from None

    def tracked(self, job_id: int) -> bool:
        return self.section is not None and job_id in self.section.tracked_jobs

    def latest(self, asset: str) -> Snapshot | None:
        try:
            return self.ctx.reader.latest(asset)
        except SnapshotNotFound:
            return None

    async def live(
        self,
        tool: str,
        fn: Callable[[DbtCloudClient], T],
        arguments: dict[str, Any],
        *,
        cause: str | None = None,
    ) -> tuple[T, dict[str, Any]]:
        """Run fn(client) as an audited live call in a worker thread; read-only unless a cause is given."""
        client = self.client()

        def call() -> Any:
            with api_errors():
                return fn(client)

        def audited() -> Any:
            # a call with a cause triggers a run (changes dbt Cloud); without one it only reads
            effects = "none" if cause is None else "external"
            return self.ctx.live().run(tool, call, arguments=arguments, cause=cause, effects=effects)

        result = await anyio.to_thread.run_sync(audited)
        return result.value, result.stamp()


@contextmanager
def api_errors() -> Iterator[None]:
    from ade_platform.clients.dbt_cloud import DbtCloudError

    try:
        yield
    except DbtCloudError as exc:
        raise ToolFailure(exc.code, exc.detail) from None


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _status_filter(status: str | None) -> int | None:
    if status is None or status.strip().lower() in ("", "null", "none", "any"):
        return None
    code = lib.STATUS_FILTERS.get(status.strip().lower())
    if code is None:
        raise ToolFailure(
            "invalid_argument", f"status must be Success, Error, Cancelled or null, not {status!r}"
        )
    return code


def build(ctx: BridgeContext) -> FastMCP:
    server = new_toolset(
        "dbt-cloud",
        "dbt Cloud jobs, runs and artifacts (Administrative API v2): trigger a job, wait for its run, read its "
        "artifacts and source freshness. Tracked jobs answer from Dagster's snapshots.",
    )
    service = DbtCloudService(ctx)

    @server.tool(annotations=TRIGGER)
    async def dbtcloud_trigger_job(
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
        steps = service.check_trigger(job_id, steps_override)
        arguments = {"job_id": job_id, "steps_override": steps}
        run, stamp = await service.live(
            "dbtcloud_trigger_job",
            lambda c: c.trigger_job(job_id, lib.agent_cause(cause), steps),
            arguments,
            cause=cause,
        )
        return {
            "run_id": run["id"],
            "job_id": run.get("job_definition_id") or job_id,
            "status": lib.status_name(run.get("status")),
            "created_at": lib.iso(run.get("created_at")),
            "href": run.get("href"),
            "cause": cause,
            "steps_override": steps,
            "provenance": stamp,
        }

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    async def dbtcloud_poll_run(
        run_id: RunId,
        context: Context,
        timeout_seconds: Annotated[
            int, Field(ge=0, le=86_400, description="Longest wait; past it the current state with timed_out.")
        ] = 1800,
    ) -> PollAnswer:
        """Wait until a dbt Cloud run is success, error or cancelled (or the timeout passes), checking its status
        every dbt_cloud.poll_interval_seconds and sending progress notifications meanwhile. Returns the run's
        state with per-step durations."""
        client = service.client()
        interval = service.section.poll_interval_seconds if service.section else 10
        started = time.monotonic()
        checks = 0
        while True:
            with api_errors():
                run = await anyio.to_thread.run_sync(lambda: client.get_run(run_id))
            checks += 1
            waited = time.monotonic() - started
            status = lib.status_name(run.get("status"))
            done = run.get("status") in lib.TERMINAL
            timed_out = not done and waited + min(interval, 0.01) >= timeout_seconds
            if done or timed_out:
                break
            await context.report_progress(
                progress=round(waited, 1),
                total=float(timeout_seconds),
                message=f"run {run_id} {status} after {waited:.0f} s",
            )
            await asyncio.sleep(min(interval, max(timeout_seconds - waited, 0)))
        answer: dict[str, Any] = {
            "run_id": run_id,
            "job_id": run.get("job_definition_id"),
            "status": status,
            "status_message": run.get("status_message"),
            "started_at": lib.iso(run.get("started_at")),
            "finished_at": lib.iso(run.get("finished_at")),
            "duration_seconds": lib.seconds_between(run.get("started_at"), run.get("finished_at")),
            "steps": [lib.step_summary(s) for s in run.get("run_steps") or []],
            "timed_out": timed_out,
            "status_checks": checks,
            "waited_seconds": round(time.monotonic() - started, 3),
            "href": run.get("href"),
        }
        # The wait itself is not a Dagster op (it can take minutes); its outcome is recorded as one.
        _, stamp = await service.live(
            "dbtcloud_poll_run", lambda c: None, {"run_id": run_id, "timeout_seconds": timeout_seconds}
        )
        return ctx.observed("dbtcloud_poll_run", {**answer, "provenance": stamp})  # type: ignore[return-value]

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    async def dbtcloud_get_last_run(
        job_id: JobId,
        status: Annotated[
            str | None,
            Field(max_length=20, description="Success (default), Error, Cancelled, or null for any status."),
        ] = "Success",
    ) -> LastRunAnswer:
        """The most recent run of a job with the given status: whether it succeeded recently, when, why it ran.
        Tracked jobs answer from Dagster's dbt_cloud_runs snapshot; others ask dbt Cloud."""
        code = _status_filter(status)
        snapshot = service.latest(RUNS_ASSET) if service.tracked(job_id) else None
        if snapshot is not None:
            for record in snapshot.data.get("runs") or []:
                if record.get("job_id") == job_id and (code is None or record.get("status_code") == code):
                    return ctx.cached_answer(snapshot, lib.last_run_answer(record))  # type: ignore[return-value]
            raise ToolFailure(
                "no_matching_run",
                f"no run of job {job_id} with status {status} in the latest snapshot",
                job_id=job_id,
                status_filter=status,
            )

        def fetch(client: DbtCloudClient) -> dict[str, Any] | None:
            run = client.last_run(job_id, code)
            if run is None:
                client.get_job(
                    job_id
                )  # job_not_found rather than no_matching_run for a job that does not exist
            return run

        run, stamp = await service.live("dbtcloud_get_last_run", fetch, {"job_id": job_id, "status": status})
        if run is None:
            raise ToolFailure(
                "no_matching_run",
                f"job {job_id} has no run with status {status}",
                job_id=job_id,
                status_filter=status,
            )
        return ctx.observed(
            "dbtcloud_get_last_run",
            {**lib.last_run_answer(lib.run_record(run)), "provenance": stamp},
            latest=code is None,
        )  # type: ignore[return-value]

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    async def dbtcloud_fetch_artifact(run_id: RunId, artifact: ArtifactName) -> ArtifactAnswer:
        """A dbt artifact (manifest, catalog, run_results, sources) of a dbt Cloud run. Inlined up to
        dbt_cloud.max_artifact_bytes; a larger one comes as a summary plus the resource URI of the whole file."""
        data, stamp = await service.live(
            "dbtcloud_fetch_artifact",
            lambda c: c.get_artifact(run_id, artifact).content,
            {"run_id": run_id, "artifact": artifact},
        )
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ToolFailure(
                "artifact_unreadable", f"{artifact} of run {run_id} is not valid JSON"
            ) from None
        cap = service.section.max_artifact_bytes if service.section else 200_000
        inline = len(data) <= cap and isinstance(parsed, dict)
        return {
            "artifact": artifact,
            "run_id": run_id,
            "fetched_at": _now(),
            "size_bytes": len(data),
            "truncated": not inline,
            "content": parsed if inline else None,
            "summary": None if inline else lib.artifact_summary(artifact, parsed),
            "resource_uri": RESOURCE_URI.format(run_id=run_id, name=artifact),
            "provenance": stamp,
        }

    @server.resource(
        RESOURCE_URI,
        name="dbtcloud-run-artifact",
        description="The whole artifact file of a dbt Cloud run (JSON), however large.",
        mime_type="application/json",
    )
    async def run_artifact(run_id: str, name: str) -> str:
        if not run_id.isdigit() or name not in lib.ARTIFACT_NAMES:
            raise ToolFailure(
                "invalid_argument", "expected dbtcloud://runs/<run id>/artifacts/<artifact>.json"
            )
        client = service.client()
        with api_errors():
            artifact = await anyio.to_thread.run_sync(lambda: client.get_artifact(int(run_id), name))
        return artifact.content.decode()

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    async def dbtcloud_list_jobs(
        project_id: Annotated[int, Field(ge=1, description="The dbt Cloud project ID.")],
        environment_id: Annotated[
            int | None, Field(ge=1, description="Only jobs of this environment; default all environments.")
        ] = None,
    ) -> JobsAnswer:
        """The project's jobs: steps, schedule, environment, docs and source freshness settings. The configured
        project answers from Dagster's dbt_cloud_jobs snapshot."""
        snapshot = service.latest(JOBS_ASSET)
        configured = service.section is not None and service.section.project_id == project_id
        if snapshot is not None and configured and snapshot.data.get("project_id") == project_id:
            jobs = [
                lib.list_jobs_entry(j)
                for j in snapshot.data.get("jobs") or []
                if j.get("project_id") == project_id and (environment_id in (None, j.get("environment_id")))
            ]
            body = {
                "project_id": project_id,
                "environment_id": environment_id,
                "jobs": jobs,
                "count": len(jobs),
            }
            return ctx.cached_answer(snapshot, body)  # type: ignore[return-value]
        tracked = set(service.section.tracked_jobs) if service.section else set()
        raw, stamp = await service.live(
            "dbtcloud_list_jobs",
            lambda c: c.list_jobs(project_id, environment_id),
            {"project_id": project_id, "environment_id": environment_id},
        )
        jobs = [lib.list_jobs_entry(lib.job_record(j, j.get("id") in tracked)) for j in raw]
        return {
            "project_id": project_id,
            "environment_id": environment_id,
            "jobs": jobs,  # type: ignore[typeddict-item]
            "count": len(jobs),
            "provenance": stamp,
        }

    @server.tool(annotations=READ_ONLY_OPEN_WORLD)
    async def dbtcloud_get_source_freshness(job_id: JobId) -> FreshnessAnswer:
        """Per-source freshness (pass/warn/error, newest load, age) from the sources.json of the most recent
        completed run of a job that runs source freshness. Tracked jobs answer from Dagster's snapshot."""
        snapshot = service.latest(FRESHNESS_ASSET) if service.tracked(job_id) else None
        if snapshot is not None:
            entry = (snapshot.data.get("jobs") or {}).get(str(job_id))
            if entry is None:
                raise ToolFailure(
                    "no_freshness_run", f"job {job_id} has no run with source freshness", job_id=job_id
                )
            return ctx.cached_answer(snapshot, {"job_id": job_id, **entry})  # type: ignore[return-value]

        def fetch(client: DbtCloudClient) -> dict[str, Any]:
            return latest_freshness(
                client, job_id, limit=service.section.recent_runs if service.section else 20
            )

        entry, stamp = await service.live("dbtcloud_get_source_freshness", fetch, {"job_id": job_id})
        return {"job_id": job_id, **entry, "provenance": stamp}  # type: ignore[typeddict-item]

    return server


def latest_freshness(client: DbtCloudClient, job_id: int, limit: int = 20) -> dict[str, Any]:
    """The freshness rows of the newest completed run of a job that has a sources.json (ToolFailure otherwise)."""
    job = client.get_job(job_id)
    if not lib.runs_freshness(job):
        raise ToolFailure(
            "no_freshness_run",
            f"job {job_id} does not run source freshness (run_generate_sources is off and no step runs it)",
            job_id=job_id,
        )
    found = client.latest_artifact(job_id, "sources.json", limit=limit)
    if found is None:
        raise ToolFailure(
            "no_freshness_run", f"none of job {job_id}'s last {limit} runs wrote sources.json", job_id=job_id
        )
    run, artifact = found
    return lib.freshness_entry(run, orjson.loads(artifact.content))
