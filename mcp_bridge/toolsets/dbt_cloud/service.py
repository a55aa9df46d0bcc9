"""What the dbt-cloud tools do: answer from Dagster's snapshots for tracked jobs, otherwise call the configured
account as an audited live call (read-only on the fast path; a trigger in-line, as a run that changes dbt Cloud).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ade_platform.lib import dbt_cloud as lib
from ade_platform.lib import json_query
from ade_platform.lib.dbt.artifacts import parse_artifact
from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS
from ade_platform.lib.errors import CodedError
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure
from mcp_bridge.toolsets.schemas import dbt_cloud as shapes
from mcp_bridge.toolsets.schemas.provenance import Provenance

if TYPE_CHECKING:
    from ade_platform.clients.dbt_cloud import DbtCloudClient
    from ade_platform.store import Snapshot

T = TypeVar("T")
JOBS_ASSET = "dbt_cloud_jobs"
RUNS_ASSET = "dbt_cloud_runs"
FRESHNESS_ASSET = "dbt_cloud_freshness"
RESOURCE_URI = "dbtcloud://runs/{run_id}/artifacts/{name}"
RESOURCE_TOOL = "dbtcloud_run_artifact_resource"  # the audit runs' ade/tool for reads of RESOURCE_URI
# The failures of the check for something newer after which the snapshot still answers, flagged stale.
UNREACHABLE = frozenset({"connection_failed", "rate_limited", "upstream_error", "auth_failed"})
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
        arguments = {"run_id": run_id, "timeout_seconds": timeout_seconds}
        try:
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
        except anyio.get_cancelled_exc_class():
            # A cancelled wait (tasks/cancel, a client gone) is on record too: a failed run saying so.
            with anyio.CancelScope(shield=True), contextlib.suppress(ToolFailure):
                await self.live("dbtcloud_poll_run", _cancelled(run_id, checks), arguments)
            raise
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
        _, stamp = await self.live("dbtcloud_poll_run", lambda c: None, arguments)
        return self.ctx.observed("dbtcloud_poll_run", {**answer, "provenance": stamp})  # type: ignore[return-value]

    # ---- reads: a tracked job's snapshot when dbt Cloud has nothing newer, dbt Cloud otherwise ----------------
    async def checked(
        self,
        tool: str,
        snapshot: Snapshot | None,
        fn: Callable[[DbtCloudClient], T],
        arguments: dict[str, Any],
    ) -> tuple[T | None, Provenance | None, str | None]:
        """One audited call to dbt Cloud (the cheap check for something newer, or the answer itself). With a
        snapshot to fall back on, an unreachable account gives (None, None, why the snapshot may be stale)."""
        try:
            value, stamp = await self.live(tool, fn, arguments)
        except (
            CodedError
        ) as exc:  # the client's DbtCloudError (its module loads httpx: not on the cached path)
            if snapshot is None or exc.code not in UNREACHABLE:
                raise
            return None, None, f"dbt Cloud could not be asked for anything newer ({exc.code})"
        return value, stamp, None

    async def last_run(self, job_id: int, status: str | None) -> shapes.LastRunAnswer:
        code = status_filter(status)
        snapshot = self.ctx.latest_or_none(RUNS_ASSET) if self.tracked(job_id) else None
        cached = snapshot_run(snapshot, job_id, code)

        def fetch(client: DbtCloudClient) -> dict[str, Any] | None:
            # The newest matching run (one call): the check for a newer run, and the answer when there is one.
            run = client.last_run(job_id, code)
            if run is None and snapshot is None:
                client.get_job(
                    job_id
                )  # job_not_found rather than no_matching_run for a job that does not exist
            return run

        arguments = {"job_id": job_id, "status": status}
        run, stamp, unreachable = await self.checked("dbtcloud_get_last_run", snapshot, fetch, arguments)
        if snapshot is not None and (unreachable or same_run(cached, run)):
            if cached is None:
                where = f"in the latest snapshot ({unreachable})" if unreachable else "in dbt Cloud"
                raise no_matching_run(job_id, status, where)
            body = lib.last_run_answer(cached)
            return self.ctx.cached_answer(snapshot, body, stale_reason=unreachable)  # type: ignore[return-value]
        if run is None:
            raise no_matching_run(job_id, status, "in dbt Cloud")
        return self.ctx.observed(
            "dbtcloud_get_last_run",
            {**lib.last_run_answer(lib.run_record(run)), "provenance": stamp},
            latest=code is None,
        )  # type: ignore[return-value]

    async def fetch_artifact(self, run_id: int, artifact: str, query: str | None) -> shapes.ArtifactAnswer:
        if query is not None:
            json_query.evaluate(query, {})  # a malformed expression is refused before any call
        data, stamp = await self.live(
            "dbtcloud_fetch_artifact",
            lambda c: c.get_artifact(run_id, artifact).content,
            {"run_id": run_id, "artifact": artifact, "query": query},
        )
        # what the dbt-artifacts tools accept: valid JSON whose metadata.dbt_schema_version is one they read
        parsed = parse_artifact(data, lib.ARTIFACT_KINDS[artifact])
        cap = self.section.max_artifact_bytes if self.section else 200_000
        answer: dict[str, Any] = {
            "artifact": artifact,
            "run_id": run_id,
            "fetched_at": _now(),
            "size_bytes": len(data),
            "query": query,
            "resource_uri": RESOURCE_URI.format(run_id=run_id, name=artifact),
            "dbt_tools": self.dbt_tools_fed(run_id, artifact),
            "provenance": stamp,
        }
        if query is not None:
            result = json_query.evaluate(query, parsed)
            size = json_query.bounded_size(result, cap)
            fits = size <= cap
            answer |= {"truncated": not fits, "content": None, "result": result if fits else None}
            answer["summary"] = None if fits else lib.artifact_summary(artifact, parsed, result_over=cap)
            return answer  # type: ignore[return-value]
        inline = len(data) <= cap
        answer |= {
            "truncated": not inline,
            "content": parsed if inline else None,
            "result": None,
            "summary": None if inline else lib.artifact_summary(artifact, parsed),
        }
        return answer  # type: ignore[return-value]

    def dbt_tools_fed(self, run_id: int, artifact: str) -> list[str]:
        """The dbt-artifacts tools that answer from this very file (dbt_cloud.dbt_tools_job publishes it)."""
        kind = lib.ARTIFACT_KINDS[artifact]
        snapshot = self.ctx.latest_or_none(ARTIFACT_ASSETS[kind])
        origin = (snapshot.provenance.source or {}).get("dbt_cloud") if snapshot is not None else None
        if not isinstance(origin, dict) or origin.get("run_id") != run_id:
            return []
        return [self.ctx.tool_name(name) for name in lib.DBT_TOOLS_READING[artifact]]

    async def artifact_text(self, run_id: str, name: str) -> str:
        """The whole artifact file (the resource behind a summarized dbtcloud_fetch_artifact answer)."""
        if not run_id.isdigit() or name not in lib.ARTIFACT_NAMES:
            raise ToolFailure(
                "invalid_argument", "expected dbtcloud://runs/<run id>/artifacts/<artifact>.json"
            )
        # a read of dbt Cloud like dbtcloud_fetch_artifact's: audited the same way (the fast path of reads)
        artifact, _stamp = await self.live(
            RESOURCE_TOOL,
            lambda c: c.get_artifact(int(run_id), name),
            {"run_id": int(run_id), "name": name},
        )
        return artifact.content.decode()

    async def list_jobs(self, project_id: int, environment_id: int | None) -> shapes.JobsAnswer:
        snapshot = self.jobs_snapshot(project_id, environment_id)
        tracked = set(self.section.tracked_jobs) if self.section else set()
        # Listing the project's jobs is one page for most projects: it is the check and, when a job was added or
        # changed since the snapshot, the answer.
        raw, stamp, unreachable = await self.checked(
            "dbtcloud_list_jobs",
            snapshot,
            lambda c: c.list_jobs(project_id, environment_id),
            {"project_id": project_id, "environment_id": environment_id},
        )
        if snapshot is not None:
            kept = [
                j
                for j in snapshot.data.get("jobs") or []
                if j.get("project_id") == project_id and environment_id in (None, j.get("environment_id"))
            ]
            if unreachable or lib.same_jobs(kept, raw or []):
                jobs = [lib.list_jobs_entry(j) for j in kept]
                body = {
                    "project_id": project_id,
                    "environment_id": environment_id,
                    "jobs": jobs,
                    "count": len(jobs),
                }
                return self.ctx.cached_answer(snapshot, body, stale_reason=unreachable)  # type: ignore[return-value]
        jobs = [lib.list_jobs_entry(lib.job_record(j, j.get("id") in tracked)) for j in raw or []]
        return {
            "project_id": project_id,
            "environment_id": environment_id,
            "jobs": jobs,  # type: ignore[typeddict-item]
            "count": len(jobs),
            "provenance": stamp,  # type: ignore[typeddict-item]
        }

    def jobs_snapshot(self, project_id: int, environment_id: int | None) -> Snapshot | None:
        """The job inventory snapshot when it holds every job the question asks about: the configured project,
        and all its environments unless one is asked for (a snapshot of one environment never answers for all)."""
        section = self.section
        if section is None or section.project_id != project_id:
            return None
        snapshot = self.ctx.latest_or_none(JOBS_ASSET)
        if snapshot is None or snapshot.data.get("project_id") != project_id:
            return None
        # snapshots written before it was recorded were taken with the configured environment
        taken_with = snapshot.data.get("environment_id", section.environment_id)
        return snapshot if taken_with in (None, environment_id) else None

    async def source_freshness(self, job_id: int) -> shapes.FreshnessAnswer:
        snapshot = self.ctx.latest_or_none(FRESHNESS_ASSET) if self.tracked(job_id) else None
        entry = (snapshot.data.get("jobs") or {}).get(str(job_id)) if snapshot is not None else None
        limit = self.section.recent_runs if self.section else 20

        def fetch(client: DbtCloudClient) -> dict[str, Any] | None:
            # The check: the job's newest completed run that may stand for it (one page of runs). The snapshot is
            # current when that run is the one it read; otherwise the freshness is read from dbt Cloud.
            if entry is not None:
                runs = client.list_runs(job_id, limit=limit)
                newest = next(
                    (r for r in runs if r.get("status") in lib.TERMINAL and lib.canonical_run(r)), None
                )
                if newest is not None and newest.get("id") == entry.get("run_id"):
                    return None
            return latest_freshness(client, job_id, limit=limit)

        found, stamp, unreachable = await self.checked(
            "dbtcloud_get_source_freshness", snapshot, fetch, {"job_id": job_id}
        )
        if snapshot is not None and found is None:
            if entry is None:
                raise ToolFailure(
                    "no_freshness_run", f"job {job_id} has no run with source freshness", job_id=job_id
                )
            body = {"job_id": job_id, **entry}
            return self.ctx.cached_answer(snapshot, body, stale_reason=unreachable)  # type: ignore[return-value]
        return {"job_id": job_id, **found, "provenance": stamp}  # type: ignore[typeddict-item]


def snapshot_run(snapshot: Snapshot | None, job_id: int, code: int | None) -> dict[str, Any] | None:
    """The newest run of a job with that status in the `dbt_cloud_runs` snapshot."""
    for record in snapshot.data.get("runs") or [] if snapshot is not None else []:
        if record.get("job_id") == job_id and (code is None or record.get("status_code") == code):
            return record
    return None


def same_run(record: dict[str, Any] | None, run: dict[str, Any] | None) -> bool:
    """Whether dbt Cloud's newest matching run is the snapshot's, in the same state (none in both counts)."""
    if record is None or run is None:
        return record is None and run is None
    return record.get("id") == run.get("id") and record.get("status_code") == run.get("status")


def no_matching_run(job_id: int, status: str | None, where: str) -> ToolFailure:
    return ToolFailure(
        "no_matching_run",
        f"job {job_id} has no run with status {status} {where}",
        job_id=job_id,
        status_filter=status,
    )


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
    return lib.freshness_entry(run, parse_artifact(artifact.content, "sources"))


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


def _cancelled(run_id: int, checks: int) -> Callable[[Any], None]:
    """The body of a cancelled wait's audit run: it fails with `cancelled` (the dbt Cloud run goes on)."""

    def body(_client: Any) -> None:
        raise ToolFailure(
            "cancelled",
            f"the wait for run {run_id} was cancelled after {checks} status checks",
            run_id=run_id,
        )

    return body
