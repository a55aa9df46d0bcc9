"""dbt: the project's models via dagster-dbt (tests become asset checks), and the artifact snapshots
(manifest, catalog, run results, source freshness) plus the lineage index, published to the store."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import contextlib
import os
import shutil
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    DataVersion,
    DefaultSensorStatus,
    Failure,
    MaterializeResult,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    asset,
    sensor,
)
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets

from ade_platform.config import Settings
from ade_platform.defs.resources import StoreResource
from ade_platform.lib.dbt.publish import (
    ARTIFACT_ASSETS,
    LINEAGE_INDEX_ASSET,
    SELECT_STAR_ASSET,
    file_signature,
    mark_invocation,
    publish_artifact,
    publish_invocation,
    publish_lineage_index,
    publish_select_star,
)
from ade_platform.lib.dbt.refresh import BY_SENSOR, PublisherBusy, lock_path, publish_newer
from ade_platform.lib.dbt.staleness import newer_files, watched_target
from ade_platform.lib.warehouse import file_lock
from ade_platform.store import Provenance, SnapshotNotFound, StoreReader, StoreWriter

MODELS_GROUP = "dbt_models"
TARGET_POLL_SECONDS = 30
ARTIFACTS_GROUP = "dbt_artifacts"


class _Translator(DagsterDbtTranslator):
    def get_asset_spec(self, manifest, unique_id, project):  # type: ignore[override]
        spec = super().get_asset_spec(manifest, unique_id, project)
        if unique_id.startswith("source."):
            return spec
        node = manifest["nodes"].get(unique_id) or {}
        description = node.get("description") or f"dbt {node.get('resource_type', 'node')} {node.get('name')}"
        return spec.replace_attributes(group_name=MODELS_GROUP, description=description)


def dbt_executable() -> str:
    # The dbt of the same environment, so `ade` works without the venv on PATH.
    candidate = Path(sys.executable).parent / "dbt"
    return str(candidate) if candidate.exists() else "dbt"


def build_dbt_project(settings: Settings) -> DbtProject:
    assert settings.dbt is not None
    project = DbtProject(
        project_dir=settings.dbt.project_dir,
        target_path=settings.dbt_target_path,
        profiles_dir=settings.dbt.profiles_dir,
        target=settings.dbt.target,
    )
    # A fresh clone has no manifest, and under `dagster dev` the project may have changed since the last parse:
    # parse here with this environment's dbt (dagster-dbt's own `prepare_if_dev` looks for `dbt` on PATH, which
    # an MCP host or a service manager need not have).
    if not project.manifest_path.exists() or os.getenv("DAGSTER_IS_DEV_CLI"):
        DbtCliResource(project_dir=project, dbt_executable=dbt_executable()).cli(
            ["parse", "--quiet"], target_path=project.target_path
        ).wait()
    return project


def _store_metadata(provenance: Provenance, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"store_version": provenance.version, "data_version": provenance.data_version, **(extra or {})}


def build_dbt_assets(settings: Settings) -> list:
    if settings.dbt is None:
        return []
    project = build_dbt_project(settings)
    last_build = settings.home / "dbt" / "last_build"
    scratch = settings.home / "dbt" / "invocations"
    invocation_target = scratch / "build"

    def writing_warehouse() -> contextlib.AbstractContextManager[None]:
        """dbt's DuckDB warehouse held for writing (the gateway's reads wait instead of blocking dbt)."""
        assert settings.dbt is not None
        warehouse = settings.warehouses.get(settings.dbt.warehouse or "")
        if warehouse is None or warehouse.type != "duckdb":
            return contextlib.nullcontext()
        return file_lock.writing(warehouse.path)

    @dbt_assets(
        manifest=project.manifest_path,
        project=project,
        dagster_dbt_translator=_Translator(),
        name="dbt_project_models",
    )
    def dbt_models(
        context: AssetExecutionContext, dbt: DbtCliResource, store: StoreResource
    ) -> Iterator[Any]:
        writer, run_id = store.writer(), context.run.run_id
        started_at = datetime.now(UTC).isoformat(timespec="microseconds")
        # Cached tools read this marker: until the build publishes, their answers say a build is under way.
        mark_invocation(writer, state="running", run_id=run_id, started_at=started_at)
        # An explicit target under ADE_HOME: dagster-dbt's default writes into the project's own target/.
        with writing_warehouse():
            invocation = dbt.cli(
                ["build"], context=context, raise_on_error=False, target_path=invocation_target
            )
            try:
                yield from invocation.stream()
            finally:
                # Keep the artifacts of the last build (failed ones too: they are what an agent debugs).
                last_build.mkdir(parents=True, exist_ok=True)
                for name in ("run_results.json", "manifest.json"):
                    produced = invocation.target_path / name
                    if produced.exists():
                        shutil.copy2(produced, last_build / name)
                # Published here, whatever the outcome: the dbt_run_results asset sits downstream of the
                # models and Dagster skips it when a model fails, which is exactly when the results matter.
                published = publish_invocation(writer, store.reader(), invocation.target_path, run_id=run_id)
                mark_invocation(writer, state="published", run_id=run_id, started_at=started_at)
                context.log.info(f"published the build's artifacts to the store: {published}")
        if not invocation.is_successful():
            raise Failure("dbt build failed; see the run results (dbt_run_results) for which nodes")

    model_keys = [k for k in dbt_models.keys]

    def run_dbt(dbt: DbtCliResource, args: list[str], name: str) -> Path:
        # A stable folder per command keeps dbt's partial parsing warm between runs (saves seconds).
        target = scratch / name
        for stale in ("manifest.json", "catalog.json", "sources.json"):
            (target / stale).unlink(missing_ok=True)
        with writing_warehouse():  # dbt-duckdb opens the file read-write, even for docs and freshness
            dbt.cli([*args, "--quiet"], target_path=target, raise_on_error=False).wait()
        return target

    @asset(
        name=ARTIFACT_ASSETS["manifest"],
        group_name=ARTIFACTS_GROUP,
        description="dbt manifest.json (dbt parse) in the store: the project's nodes, sources, tests, exposures.",
        kinds={"dbt"},
    )
    def dbt_manifest(context: AssetExecutionContext, dbt: DbtCliResource, store: StoreResource):
        target = run_dbt(dbt, ["parse"], "parse")
        prov = publish_artifact(
            store.writer(), "manifest", target / "manifest.json", run_id=context.run.run_id
        )
        return MaterializeResult(metadata=_store_metadata(prov), data_version=DataVersion(prov.data_version))

    @asset(
        name=ARTIFACT_ASSETS["run-results"],
        group_name=ARTIFACTS_GROUP,
        deps=model_keys,
        description="dbt run_results.json of the last `dbt build` in the store: status of every model and test.",
        kinds={"dbt"},
    )
    def dbt_run_results(context: AssetExecutionContext, store: StoreResource):
        path = last_build / "run_results.json"
        if not path.exists():
            raise Failure("no dbt build has run yet: materialize the dbt models first")
        try:  # the build op already published this very file: record it, do not copy it again
            latest = store.reader().latest(ARTIFACT_ASSETS["run-results"]).provenance
        except SnapshotNotFound:
            latest = None
        if latest is not None and latest.source.get("file_signature") == file_signature(
            invocation_target / "run_results.json"
        ):
            prov = latest
        else:
            prov = publish_artifact(store.writer(), "run-results", path, run_id=context.run.run_id)
        return MaterializeResult(metadata=_store_metadata(prov), data_version=DataVersion(prov.data_version))

    @asset(
        name=ARTIFACT_ASSETS["catalog"],
        group_name=ARTIFACTS_GROUP,
        deps=model_keys,
        description="dbt catalog.json (dbt docs generate) in the store: the warehouse's columns and types per node.",
        kinds={"dbt"},
    )
    def dbt_catalog(context: AssetExecutionContext, dbt: DbtCliResource, store: StoreResource):
        target = run_dbt(dbt, ["docs", "generate"], "docs")
        if not (target / "catalog.json").exists():
            raise Failure("dbt docs generate produced no catalog.json")
        prov = publish_artifact(store.writer(), "catalog", target / "catalog.json", run_id=context.run.run_id)
        return MaterializeResult(metadata=_store_metadata(prov), data_version=DataVersion(prov.data_version))

    source_keys = [k for k in dbt_models.dependency_keys if k not in set(model_keys)]

    @asset(
        name=ARTIFACT_ASSETS["sources"],
        group_name=ARTIFACTS_GROUP,
        deps=source_keys,
        description="dbt sources.json (dbt source freshness) in the store: freshness status of every source.",
        kinds={"dbt"},
    )
    def dbt_sources(context: AssetExecutionContext, dbt: DbtCliResource, store: StoreResource):
        # Exit code 1 is the normal answer when a source is stale; the artifact is what we want.
        target = run_dbt(dbt, ["source", "freshness"], "freshness")
        path = target / "sources.json"
        if not path.exists():
            raise Failure(
                "dbt source freshness produced no sources.json (no source has freshness configured?)"
            )
        prov = publish_artifact(store.writer(), "sources", path, run_id=context.run.run_id)
        statuses: dict[str, int] = {}
        for result in store.reader().get(prov.asset, prov.version).data.get("results", []):
            statuses[result.get("status", "unknown")] = statuses.get(result.get("status", "unknown"), 0) + 1
        return MaterializeResult(
            metadata=_store_metadata(prov, {f"freshness_{k}": v for k, v in statuses.items()}),
            data_version=DataVersion(prov.data_version),
        )

    @asset(
        name=LINEAGE_INDEX_ASSET,
        group_name=ARTIFACTS_GROUP,
        deps=[AssetKey(ARTIFACT_ASSETS["manifest"]), AssetKey(ARTIFACT_ASSETS["catalog"])],
        description="Compact lineage index derived from the manifest and catalog (nodes, parents, children, "
        "tests by node, columns), so no MCP tool re-parses a manifest.",
        kinds={"python"},
    )
    def dbt_lineage_index(context: AssetExecutionContext, store: StoreResource):
        prov, stats = publish_lineage_index(store.writer(), store.reader(), run_id=context.run.run_id)
        return MaterializeResult(
            metadata=_store_metadata(prov, stats), data_version=DataVersion(prov.data_version)
        )

    @asset(
        name=SELECT_STAR_ASSET,
        group_name=ARTIFACTS_GROUP,
        deps=[AssetKey(LINEAGE_INDEX_ASSET), *model_keys],
        description="Every model that selects `*`, found on the sqlglot syntax tree of its compiled SQL (the last "
        "build's where the manifest has none), with the star's scope and whether it passes upstream columns "
        "through: dbt_find_select_star answers from it instead of parsing every model.",
        kinds={"python"},
    )
    def dbt_select_star(context: AssetExecutionContext, store: StoreResource):
        prov, stats = publish_select_star(
            store.writer(), store.reader(), last_build / "manifest.json", run_id=context.run.run_id
        )
        return MaterializeResult(
            metadata=_store_metadata(prov, stats), data_version=DataVersion(prov.data_version)
        )

    return [
        dbt_models,
        dbt_manifest,
        dbt_run_results,
        dbt_catalog,
        dbt_sources,
        dbt_lineage_index,
        dbt_select_star,
    ]


def build_dbt_sensors(settings: Settings) -> list:
    """A sensor that publishes what dbt runs outside ADE write into the watched target folder."""
    if settings.dbt is None:
        return []
    watched = watched_target(settings.dbt.target_path, settings.dbt.project_dir)
    assert watched is not None

    @sensor(
        name="dbt_target_folder_sensor",
        minimum_interval_seconds=TARGET_POLL_SECONDS,
        default_status=DefaultSensorStatus.RUNNING,
        description="Watches the dbt target folder (dbt.target_path, else the project's target/) for artifacts "
        "written by dbt runs outside ADE (a terminal, CI) and publishes them to the store, so the cached tools "
        "describe the latest run wherever it ran. Failed runs included. An MCP gateway publishes them too, at "
        "answer time (no daemon needed); whichever looks first publishes, once.",
    )
    def dbt_target_folder_sensor(context: SensorEvaluationContext) -> Any:
        return publish_external_artifacts(settings, watched)

    return [dbt_target_folder_sensor]


def publish_external_artifacts(settings: Settings, watched: Path) -> Any:
    """Publish the artifacts in `watched` that are newer than the store's (one sensor tick). A gateway may have
    published them already at answer time: both take the same lock and re-check under it (lib/dbt/refresh.py)."""
    writer = StoreWriter(settings.store_root, retention=settings.store.retention)
    reader = StoreReader(settings.store_root)
    if not newer_files(watched, reader):
        return SkipReason("no artifact in the dbt target folder is newer than the store's")
    lock = lock_path(settings.home, str(settings.store_root), watched)
    try:
        published = publish_newer(writer, reader, watched, published_by=BY_SENSOR, lock=lock)
    except PublisherBusy:
        return SkipReason("another publisher (a gateway) is publishing the dbt target folder now")
    if not published:
        return SkipReason(
            "the newer artifacts are not readable yet (dbt still writing?), or were just published"
        )
    events = [
        AssetMaterialization(
            asset_key=ARTIFACT_ASSETS.get(kind, LINEAGE_INDEX_ASSET),
            description="Published from the dbt target folder (a dbt run outside ADE).",
            metadata={"store_version": version, "source": "dbt target folder"},
        )
        for kind, version in published.items()
    ]
    return SensorResult(asset_events=events)


def dbt_resource(settings: Settings) -> DbtCliResource:
    assert settings.dbt is not None
    return DbtCliResource(
        project_dir=str(settings.dbt.project_dir),
        profiles_dir=str(settings.dbt.profiles_dir) if settings.dbt.profiles_dir else None,
        target=settings.dbt.target,
        dbt_executable=dbt_executable(),
    )
