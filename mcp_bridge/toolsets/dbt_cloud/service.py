"""What the dbt-cloud tools do: answer from Dagster's snapshots for tracked jobs, otherwise call the configured
account as an audited live call (read-only on the fast path; a trigger in-line, as a run that changes dbt Cloud).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import orjson

from ade_platform.lib import dbt_cloud as lib
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.schemas import dbt_cloud as shapes
from mcp_bridge.toolsets.schemas.provenance import Provenance

if TYPE_CHECKING:
    from ade_platform.clients.dbt_cloud import DbtCloudClient

T = TypeVar("T")
JOBS_ASSET = "dbt_cloud_jobs"
RUNS_ASSET = "dbt_cloud_runs"
FRESHNESS_ASSET = "dbt_cloud_freshness"
RESOURCE_URI = "dbtcloud://runs/{run_id}/artifacts/{name}"
# progress, total, message: an MCP progress notification (fastmcp's Context.report_progress)
ReportProgress = Callable[..., Awaitable[None]]


class DbtCloudService:
    """The configured account: its client (opened by the bridge on first use), its snapshots, audited calls."""

    def __init__(self, ctx: BridgeContext):
        self.ctx = ctx
        self.section = ctx.settings.dbt_cloud

    def client(self) -> DbtCloudClient:
        """dbt_cloud_not_configured without a `dbt_cloud:` section, auth_failed with an empty token."""
        return self.ctx.client("dbt_cloud")

    async def live(
        self,
        tool: str,
        fn: Callable[[DbtCloudClient], T],
        arguments: dict[str, Any],
        *,
        cause: str | None = None,
    ) -> tuple[T, Provenance]:
        """Run fn(client) as an audited live call in a worker thread; read-only unless a cause is given."""
        client = self.client()  # an unconfigured account fails here, before any audit run starts
        # a call with a cause triggers a run (changes dbt Cloud); without one it only reads
        effects = "none" if cause is None else "external"
        value, stamp = await self.ctx.live_call_async(
            tool, lambda: fn(client), arguments=arguments, cause=cause, effects=effects
        )
        return value, stamp  # type: ignore[return-value]

    def tracked(self, job_id: int) -> bool:
        return self.section is not None and job_id in self.section.tracked_jobs

    # ---- trigger and wait ------------------------------------------------------------------------------------
    def check_trigger(self, job_id: int, steps_override: list[str] | None) -> list[str] | None:
        """Refuse, before any API call, a job off the allow-list or a steps override the policy does not allow;
        the steps to send otherwise, as the policy rendered them (what runs is what was checked)."""
        section = self.section
        if section is None:
            raise ToolFailure("dbt_cloud_not_configured", "no dbt_cloud: section in the configuration")
        return lib.checked_trigger(
            job_id,
            steps_override,
            triggerable=section.triggerable(),
            allow_steps_override=section.allow_steps_override,
            allow_full_refresh=section.allow_full_refresh,
            secret=section.api_token.get_secret_value(),
        )

    async def trigger(
        self, job_id: int, cause: str, steps_override: list[str] | None
    ) -> shapes.TriggerAnswer:
        steps = self.check_trigger(job_id, steps_override)
        run, stamp = await self.live(
            "dbtcloud_trigger_job",
            lambda c: c.trigger_job(job_id, lib.agent_cause(cause), steps),
            {"job_id": job_id, "steps_override": steps},
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

    async def poll(
        self, run_id: int, timeout_seconds: int, report_progress: ReportProgress
    ) -> shapes.PollAnswer:
        """Check the run every dbt_cloud.poll_interval_seconds until it is terminal or the timeout passes,
        reporting progress between checks."""
        client = self.client()
        interval = self.section.poll_interval_seconds if self.section else 10
        started = time.monotonic()
        checks = 0
        while True:
            run = await anyio.to_thread.run_sync(lambda: client.get_run(run_id))
            checks += 1
            waited = time.monotonic() - started
            status = lib.status_name(run.get("status"))
            done = run.get("status") in lib.TERMINAL
            timed_out = not done and waited + min(interval, 0.01) >= timeout_seconds
            if done or timed_out:
                break
            await report_progress(
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
        _, stamp = await self.live(
            "dbtcloud_poll_run", lambda c: None, {"run_id": run_id, "timeout_seconds": timeout_seconds}
        )
        return self.ctx.observed("dbtcloud_poll_run", {**answer, "provenance": stamp})  # type: ignore[return-value]

    # ---- reads: a tracked job from the snapshot, anything else from dbt Cloud -------------------------------
    async def last_run(self, job_id: int, status: str | None) -> shapes.LastRunAnswer:
        code = status_filter(status)
        snapshot = self.ctx.latest_or_none(RUNS_ASSET) if self.tracked(job_id) else None
        if snapshot is not None:
            for record in snapshot.data.get("runs") or []:
                if record.get("job_id") == job_id and (code is None or record.get("status_code") == code):
                    return self.ctx.cached_answer(snapshot, lib.last_run_answer(record))  # type: ignore[return-value]
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

        run, stamp = await self.live("dbtcloud_get_last_run", fetch, {"job_id": job_id, "status": status})
        if run is None:
            raise ToolFailure(
                "no_matching_run",
                f"job {job_id} has no run with status {status}",
                job_id=job_id,
                status_filter=status,
            )
        return self.ctx.observed(
            "dbtcloud_get_last_run",
            {**lib.last_run_answer(lib.run_record(run)), "provenance": stamp},
            latest=code is None,
        )  # type: ignore[return-value]

    async def fetch_artifact(self, run_id: int, artifact: str) -> shapes.ArtifactAnswer:
        data, stamp = await self.live(
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
        cap = self.section.max_artifact_bytes if self.section else 200_000
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

    async def artifact_text(self, run_id: str, name: str) -> str:
        """The whole artifact file (the resource behind a summarized dbtcloud_fetch_artifact answer)."""
        if not run_id.isdigit() or name not in lib.ARTIFACT_NAMES:
            raise ToolFailure(
                "invalid_argument", "expected dbtcloud://runs/<run id>/artifacts/<artifact>.json"
            )
        client = self.client()
        artifact = await anyio.to_thread.run_sync(lambda: client.get_artifact(int(run_id), name))
        return artifact.content.decode()

    async def list_jobs(self, project_id: int, environment_id: int | None) -> shapes.JobsAnswer:
        snapshot = self.ctx.latest_or_none(JOBS_ASSET)
        configured = self.section is not None and self.section.project_id == project_id
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
            return self.ctx.cached_answer(snapshot, body)  # type: ignore[return-value]
        tracked = set(self.section.tracked_jobs) if self.section else set()
        raw, stamp = await self.live(
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

    async def source_freshness(self, job_id: int) -> shapes.FreshnessAnswer:
        snapshot = self.ctx.latest_or_none(FRESHNESS_ASSET) if self.tracked(job_id) else None
        if snapshot is not None:
            entry = (snapshot.data.get("jobs") or {}).get(str(job_id))
            if entry is None:
                raise ToolFailure(
                    "no_freshness_run", f"job {job_id} has no run with source freshness", job_id=job_id
                )
            return self.ctx.cached_answer(snapshot, {"job_id": job_id, **entry})  # type: ignore[return-value]
        limit = self.section.recent_runs if self.section else 20
        entry, stamp = await self.live(
            "dbtcloud_get_source_freshness",
            lambda c: latest_freshness(c, job_id, limit=limit),
            {"job_id": job_id},
        )
        return {"job_id": job_id, **entry, "provenance": stamp}  # type: ignore[typeddict-item]


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


def status_filter(status: str | None) -> int | None:
    """dbt Cloud's status code for a filter given by name (None: any status)."""
    if status is None or status.strip().lower() in ("", "null", "none", "any"):
        return None
    code = lib.STATUS_FILTERS.get(status.strip().lower())
    if code is None:
        raise ToolFailure(
            "invalid_argument", f"status must be Success, Error, Cancelled or null, not {status!r}"
        )
    return code


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
