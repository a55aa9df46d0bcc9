"""The dbt target-folder sensor: publishes to the store what dbt runs outside ADE (a terminal, CI) write into the
watched target folder, failed runs included, so the cached tools describe the latest run wherever it ran."""

from pathlib import Path
from typing import Any

from dagster import AssetMaterialization, SensorEvaluationContext

from ade_platform.config import Settings
from ade_platform.defs.failure_sensor import Polled, Tick, failure_sensor, reach
from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS, LINEAGE_INDEX_ASSET
from ade_platform.lib.dbt.refresh import BY_SENSOR, PublisherBusy, lock_path, publish_newer
from ade_platform.lib.dbt.staleness import newer_files, watched_target
from ade_platform.store import StoreReader, StoreWriter

TARGET_POLL_SECONDS = 30


def target_folder(watched: Path) -> Polled[Path]:
    return Polled("the dbt target folder", str(watched), lambda: watched, (OSError,), "dbt")


def publish_external_artifacts(settings: Settings, watched: Path) -> Tick:
    """Publish the artifacts in `watched` that are newer than the store's (one sensor tick). A gateway may have
    published them already at answer time: both take the same lock and re-check under it (lib/dbt/refresh.py)."""
    writer = StoreWriter(settings.store_root, retention=settings.store.retention)
    reader = StoreReader(settings.store_root)
    with reach(target_folder(watched)) as folder:
        newer = newer_files(folder, reader)
    if not newer:
        return Tick(skip_reason="no artifact in the dbt target folder is newer than the store's")
    lock = lock_path(settings.home, str(settings.store_root), watched)
    try:
        published = publish_newer(writer, reader, watched, published_by=BY_SENSOR, lock=lock)
    except PublisherBusy:
        return Tick(skip_reason="another publisher (a gateway) is publishing the dbt target folder now")
    if not published:
        return Tick(
            skip_reason="the newer artifacts are not readable yet (dbt still writing?), or were just published"
        )
    events = [
        AssetMaterialization(
            asset_key=ARTIFACT_ASSETS.get(kind, LINEAGE_INDEX_ASSET),
            description="Published from the dbt target folder (a dbt run outside ADE).",
            metadata={"store_version": version, "source": "dbt target folder"},
        )
        for kind, version in published.items()
    ]
    return Tick(asset_events=events)


def target_folder_sensor(settings: Settings) -> Any:
    assert settings.dbt is not None
    watched = watched_target(settings.dbt.target_path, settings.dbt.project_dir)
    assert watched is not None

    def poll(context: SensorEvaluationContext) -> Tick:
        return publish_external_artifacts(settings, watched)

    return failure_sensor(
        "dbt_target_folder_sensor",
        minimum_interval_seconds=TARGET_POLL_SECONDS,
        description="Watches the dbt target folder (dbt.target_path, else the project's target/) for artifacts "
        "written by dbt runs outside ADE (a terminal, CI) and publishes them to the store, so the cached tools "
        "describe the latest run wherever it ran. Failed runs included. An MCP gateway publishes them too, at "
        "answer time (no daemon needed); whichever looks first publishes, once.",
        poll=poll,
    )
