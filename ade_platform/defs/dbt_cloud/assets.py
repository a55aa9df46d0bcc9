"""dbt Cloud assets: the job inventory, the recent runs and source freshness of tracked jobs, and (when a tracked
job is the dbt tools' source) its run artifacts in the dbt slots of the store."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import time
from typing import Any

from dagster import AssetExecutionContext, AssetKey, Failure, MaterializeResult, asset

from ade_platform.clients.dbt_cloud import DbtCloudClient, DbtCloudError
from ade_platform.config import ConfigError, DbtCloudSettings, Settings
from ade_platform.defs.failure_sensor import Polled
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.step_failure import reach_in_step
from ade_platform.defs.store_results import stored_result
from ade_platform.lib import dbt_cloud as lib
from ade_platform.lib.dbt.artifacts import ArtifactError, parse_artifact
from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS, publish_lineage_index, publish_select_star
from ade_platform.store import SnapshotNotFound

GROUP = "dbt_cloud"
JOBS_ASSET = "dbt_cloud_jobs"
RUNS_ASSET = "dbt_cloud_runs"
FRESHNESS_ASSET = "dbt_cloud_freshness"
ARTIFACTS_ASSET = "dbt_cloud_artifacts"
_FIRST_RUN_WAIT_SECONDS = 900


def dbt_cloud_account(section: DbtCloudSettings) -> Polled[DbtCloudClient]:
    """The configured dbt Cloud account, as its assets read it and its sensor polls it."""
    return Polled(
        "dbt Cloud",
        section.base_url,
        lambda: DbtCloudClient.from_settings(section),
        (DbtCloudError,),
        section="dbt_cloud",
    )


def dbt_cloud_assets(settings: Settings) -> list[Any]:
    """Jobs, runs and freshness of the configured account, and the artifacts of the dbt tools' job if one is set."""
    section = settings.dbt_cloud
    assert section is not None
    if section.dbt_tools_job is not None and settings.dbt is not None:
        raise ConfigError(
            "dbt_cloud.dbt_tools_job: the dbt tools read one source of artifacts; remove it to keep the local "
            "dbt project (dbt:), or remove the dbt: section to read the dbt Cloud job's artifacts"
        )
    tracked = list(section.tracked_jobs)
    account = dbt_cloud_account(section)

    @asset(
        name=JOBS_ASSET,
        group_name=GROUP,
        description="The dbt Cloud job inventory of the configured project: steps, environment, schedule, docs and "
        "source freshness settings, and which jobs ADE tracks (dbtcloud_list_jobs answers from it).",
        kinds={"dbt"},
    )
    def dbt_cloud_jobs(context: AssetExecutionContext, store: StoreResource) -> MaterializeResult:
        with reach_in_step(account) as client:
            jobs = client.list_jobs(section.project_id, section.environment_id)
        records = [lib.job_record(j, j.get("id") in tracked) for j in jobs]
        missing = sorted(set(tracked) - {r["id"] for r in records})
        if missing and section.project_id is not None:
            context.log.warning(f"tracked job(s) {missing} are not in project {section.project_id}")
        data = {
            "account_id": section.account_id,
            "project_id": section.project_id,
            # a snapshot of one environment's jobs must not answer for every environment (dbtcloud_list_jobs)
            "environment_id": section.environment_id,
            "jobs": records,
        }
        prov = store.writer().publish(
            JOBS_ASSET,
            data,
            run_id=context.run.run_id,
            source={"dbt_cloud": {"account_id": section.account_id}},
        )
        return stored_result(prov, {"jobs": len(records), "tracked": len(tracked)})

    @asset(
        name=RUNS_ASSET,
        group_name=GROUP,
        description="The recent runs of every tracked dbt Cloud job, newest first: status, timings, cause, git "
        "sha (dbtcloud_get_last_run answers from it for tracked jobs).",
        kinds={"dbt"},
    )
    def dbt_cloud_runs(context: AssetExecutionContext, store: StoreResource) -> MaterializeResult:
        runs: list[dict[str, Any]] = []
        with reach_in_step(account) as client:
            for job_id in tracked:
                client.get_job(job_id)  # a tracked job that does not exist is a configuration error
                runs += [lib.run_record(r) for r in client.list_runs(job_id, limit=section.recent_runs)]
        runs.sort(key=lambda r: r["id"], reverse=True)
        data = {"account_id": section.account_id, "runs": runs}
        prov = store.writer().publish(RUNS_ASSET, data, run_id=context.run.run_id)
        counts: dict[str, int] = {}
        for run in runs:
            counts[run["status"]] = counts.get(run["status"], 0) + 1
        return stored_result(prov, {"runs": len(runs), **{f"runs_{k}": v for k, v in counts.items()}})

    @asset(
        name=FRESHNESS_ASSET,
        group_name=GROUP,
        description="Per-source freshness from the sources.json of the newest completed run of each tracked job "
        "that runs source freshness, an agent's steps-override runs aside (dbtcloud_get_source_freshness answers "
        "from it).",
        kinds={"dbt"},
    )
    def dbt_cloud_freshness(context: AssetExecutionContext, store: StoreResource) -> MaterializeResult:
        jobs: dict[str, Any] = {}
        with reach_in_step(account) as client:
            for job_id in tracked:
                if not lib.runs_freshness(client.get_job(job_id)):
                    continue
                found = client.latest_artifact(job_id, "sources.json", limit=section.recent_runs)
                if found is None:
                    context.log.info(f"job {job_id}: no completed run with sources.json yet")
                    continue
                run, artifact = found
                try:
                    sources = parse_artifact(artifact.content, "sources")
                except ArtifactError as exc:
                    raise Failure(f"sources.json of dbt Cloud run {run['id']}: {exc.detail}") from None
                jobs[str(job_id)] = lib.freshness_entry(run, sources)
        prov = store.writer().publish(
            FRESHNESS_ASSET, {"account_id": section.account_id, "jobs": jobs}, run_id=context.run.run_id
        )
        return stored_result(prov, {"jobs_with_freshness": len(jobs)})

    assets: list = [dbt_cloud_jobs, dbt_cloud_runs, dbt_cloud_freshness]
    if section.dbt_tools_job is not None:
        assets.append(_artifacts_asset(section, section.dbt_tools_job))
    return assets


def _artifacts_asset(section: DbtCloudSettings, job_id: int) -> Any:
    account = dbt_cloud_account(section)

    @asset(
        name=ARTIFACTS_ASSET,
        group_name=GROUP,
        deps=[AssetKey(RUNS_ASSET)],
        description=f"The artifacts of dbt Cloud job {job_id}'s newest completed run (each file from the newest run "
        "that wrote it: a failed run's run_results, the last docs run's catalog) published into the dbt_manifest, "
        "dbt_catalog, dbt_run_results and dbt_sources slots, then the lineage index: the dbt-artifacts tools answer "
        "for this dbt Cloud project, with provenance naming the run. A run an agent started with a steps override "
        "never counts: only the job's own steps, or an operator's override.",
        kinds={"dbt"},
    )
    def dbt_cloud_artifacts(context: AssetExecutionContext, store: StoreResource) -> MaterializeResult:
        writer, reader = store.writer(), store.reader()
        published: dict[str, Any] = {}
        with reach_in_step(account) as client:
            _wait_for_first_run(context, client, job_id)
            for name, kind in lib.ARTIFACT_KINDS.items():
                found = client.latest_artifact(job_id, name, limit=section.recent_runs)
                if found is None:
                    continue
                run, artifact = found
                origin = {
                    "account_id": section.account_id,
                    "job_id": job_id,
                    "run_id": run["id"],
                    "run_status": lib.status_name(run.get("status")),
                }
                if _already_published(reader, ARTIFACT_ASSETS[kind], origin):
                    published[name] = run["id"]
                    continue
                try:
                    parsed = parse_artifact(artifact.content, kind)
                except ArtifactError as exc:
                    raise Failure(f"{name} of dbt Cloud run {run['id']}: {exc.detail}") from None
                meta = parsed.get("metadata") or {}
                writer.publish(
                    ARTIFACT_ASSETS[kind],
                    files={"data.json": artifact.content},
                    run_id=context.run.run_id,
                    source={
                        "dbt_cloud": origin,
                        "path": f"dbt-cloud://runs/{run['id']}/{name}",
                        "dbt_version": meta.get("dbt_version"),
                        "dbt_schema_version": meta.get("dbt_schema_version"),
                        "generated_at": meta.get("generated_at"),
                        "invocation_id": meta.get("invocation_id"),
                    },
                )
                published[name] = run["id"]
        if "manifest.json" not in published:
            raise Failure(
                f"no completed run of dbt Cloud job {job_id} has a manifest.json (an agent's steps-override runs "
                "do not count)"
            )
        index_prov, stats = publish_lineage_index(writer, reader, run_id=context.run.run_id)
        publish_select_star(writer, reader, None, run_id=context.run.run_id)
        return MaterializeResult(
            metadata={
                **{f"run_of_{k.replace('.json', '')}": v for k, v in published.items()},
                "lineage_index_version": index_prov.version,
                "lineage_nodes": stats["nodes"],
            },
        )

    return dbt_cloud_artifacts


def _already_published(reader: Any, asset_name: str, origin: dict[str, Any]) -> bool:
    try:
        return reader.latest(asset_name).provenance.source.get("dbt_cloud") == origin
    except SnapshotNotFound:
        return False


def _wait_for_first_run(context: AssetExecutionContext, client: DbtCloudClient, job_id: int) -> None:
    """A job whose only runs that count are still in progress: wait (bounded) for the first to finish, not fail."""
    deadline = time.monotonic() + _FIRST_RUN_WAIT_SECONDS
    while True:
        runs = [r for r in client.list_runs(job_id, limit=20) if lib.canonical_run(r)]
        if not runs or any(r.get("status") in lib.TERMINAL for r in runs):
            return
        if time.monotonic() > deadline:
            raise Failure(f"dbt Cloud job {job_id} has no completed run yet")
        context.log.info(
            f"waiting for run {runs[0]['id']} of job {job_id} ({lib.status_name(runs[0]['status'])})"
        )
        time.sleep(5)
