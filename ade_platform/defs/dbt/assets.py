"""dbt assets: the project's models via dagster-dbt (tests become asset checks), and the artifact snapshots
(manifest, catalog, run results, source freshness) plus the lineage index and select-star report, published to
the store."""

# No `from __future__ import annotations`: Dagster inspects the context annotation at definition time.
import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, Failure, asset
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, DbtProject, dbt_assets

from ade_platform.config import Settings
from ade_platform.defs.dbt.resources import DbtCli, dbt_environment, dbt_executable
from ade_platform.defs.resources import StoreResource
from ade_platform.defs.store_results import stored_result
from ade_platform.lib.dbt.artifacts import ARTIFACT_FILES
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
from ade_platform.lib.warehouse import file_lock
from ade_platform.store import SnapshotNotFound

MODELS_GROUP = "dbt_models"
ARTIFACTS_GROUP = "dbt_artifacts"


class _Translator(DagsterDbtTranslator):
    def get_asset_spec(self, manifest, unique_id, project):  # type: ignore[override]
        spec = super().get_asset_spec(manifest, unique_id, project)
        if unique_id.startswith("source."):
            return spec
        node = manifest["nodes"].get(unique_id) or {}
        description = node.get("description") or f"dbt {node.get('resource_type', 'node')} {node.get('name')}"
        return spec.replace_attributes(group_name=MODELS_GROUP, description=description)


def build_dbt_project(settings: Settings) -> DbtProject:
    assert settings.dbt is not None
    project = DbtProject(
        project_dir=settings.dbt.project_dir,
        target_path=settings.dbt_own_output / "target",  # ADE's parse, never the watched folder
        profiles_dir=settings.dbt.profiles_dir,
        target=settings.dbt.target,
    )
    # A fresh clone has no manifest, and under `dagster dev` the project may have changed since the last parse:
    # parse here with this environment's dbt (dagster-dbt's own `prepare_if_dev` looks for `dbt` on PATH, which
    # an MCP host or a service manager need not have).
    if not project.manifest_path.exists() or os.getenv("DAGSTER_IS_DEV_CLI"):
        DbtCli(project_dir=project, dbt_executable=dbt_executable(), env=dbt_environment(settings)).cli(
            ["parse", "--quiet"], target_path=project.target_path
        ).wait()
    return project


def _freshness_counts(sources: dict[str, Any]) -> dict[str, int]:
    """How many sources a sources.json reports in each freshness status (`freshness_pass`, ...)."""
    statuses: dict[str, int] = {}
    for result in sources.get("results", []):
        statuses[result.get("status", "unknown")] = statuses.get(result.get("status", "unknown"), 0) + 1
    return {f"freshness_{k}": v for k, v in statuses.items()}


def build_dbt_assets(settings: Settings) -> list:
    if settings.dbt is None:
        return []
    project = build_dbt_project(settings)
    last_build = settings.dbt_own_output / "last_build"
    scratch = settings.dbt_own_output / "invocations"
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

    def command_artifact(
        kind: str,
        command: list[str],
        folder: str,
        description: str,
        deps: list[AssetKey],
        missing: str | None = None,
        counts: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> AssetsDefinition:
        """The asset that runs one dbt command and publishes the artifact it writes. `missing`: why the command
        may write none (the run fails saying so); `counts`: metadata derived from the published artifact."""
        filename = ARTIFACT_FILES[kind]

        @asset(
            name=ARTIFACT_ASSETS[kind],
            group_name=ARTIFACTS_GROUP,
            deps=deps,
            description=description,
            kinds={"dbt"},
        )
        def artifact(context: AssetExecutionContext, dbt: DbtCliResource, store: StoreResource):
            path = run_dbt(dbt, command, folder) / filename
            if missing is not None and not path.exists():
                raise Failure(f"dbt {' '.join(command)} produced no {filename}{missing}")
            prov = publish_artifact(store.writer(), kind, path, run_id=context.run.run_id)
            extra = counts(store.reader().get(prov.asset, prov.version).data) if counts else {}
            return stored_result(prov, {"data_version": prov.data_version, **extra})

        return artifact

    dbt_manifest = command_artifact(
        "manifest",
        ["parse"],
        "parse",
        "dbt manifest.json (dbt parse) in the store: the project's nodes, sources, tests, exposures.",
        deps=[],
    )

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
        return stored_result(prov, {"data_version": prov.data_version})

    dbt_catalog = command_artifact(
        "catalog",
        ["docs", "generate"],
        "docs",
        "dbt catalog.json (dbt docs generate) in the store: the warehouse's columns and types per node.",
        deps=model_keys,
        missing="",
    )
    # Exit code 1 is the normal answer of `dbt source freshness` when a source is stale: the artifact is what
    # counts.
    dbt_sources = command_artifact(
        "sources",
        ["source", "freshness"],
        "freshness",
        "dbt sources.json (dbt source freshness) in the store: freshness status of every source.",
        deps=[k for k in dbt_models.dependency_keys if k not in set(model_keys)],
        missing=" (no source has freshness configured?)",
        counts=_freshness_counts,
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
        return stored_result(prov, {"data_version": prov.data_version, **stats})

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
        return stored_result(prov, {"data_version": prov.data_version, **stats})

    return [
        dbt_models,
        dbt_manifest,
        dbt_run_results,
        dbt_catalog,
        dbt_sources,
        dbt_lineage_index,
        dbt_select_star,
    ]
