"""Serving any dbt target directory without Dagster: `ade mcp --target-path DIR [--project-path DIR]`.

The directory's artifacts are published to the store on start, so the cached tools answer about that project
exactly as they do for Dagster-materialized ones; what dbt writes there later is published by the gateway itself
before it answers (mcp_bridge/context.py: BridgeReader, lib/dbt/refresh.py), as for any configured project.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ade_platform.config import ConfigError, DbtSettings, Settings
from ade_platform.lib.dbt.artifacts import ArtifactError
from ade_platform.lib.dbt.publish import publish_target_dir
from ade_platform.store import StoreWriter

log = logging.getLogger("ade.standalone")


def with_dbt_paths(settings: Settings, target_path: str | None, project_path: str | None) -> Settings:
    """Settings that point the dbt toolsets at the given directories, with the artifacts published."""
    project = Path(project_path).resolve() if project_path else None
    target = Path(target_path).resolve() if target_path else (project / "target" if project else None)
    if project is not None and not project.is_dir():
        raise ConfigError(f"--project-path {project_path}: not a directory")
    if target is None or (target_path and not target.is_dir()):
        raise ConfigError(f"--target-path {target_path or target}: not a directory")
    # A project that was never built has no target folder yet: the dbt-project tools still work on its
    # files, and the artifact tools say the artifacts are missing until dbt writes them.
    if project is None:
        # The conventional layout <project>/target; otherwise the target folder is the only root (never the
        # configured project's: its files would not match these artifacts).
        project = target.parent if (target.parent / "dbt_project.yml").is_file() else target
    dbt = DbtSettings(project_dir=project, profiles_dir=None, target_path=target)
    # A store of its own per target directory: one project's snapshots never mix with another's.
    store_root = settings.home / "standalone" / _slug(target)
    updated = settings.model_copy(
        update={"dbt": dbt, "store": settings.store.model_copy(update={"root": str(store_root)})}
    )
    writer = StoreWriter(updated.store_root, retention=settings.store.retention)
    if target.is_dir():
        try:
            publish_target_dir(writer, target)
        except ArtifactError as exc:
            raise ConfigError(f"--target-path {target}: {exc.detail}") from None
    else:
        log.warning("%s does not exist yet: serving project files only until dbt writes artifacts", target)
    return updated


def _slug(path: Path) -> str:
    import hashlib

    return f"{path.name}-{hashlib.sha256(str(path).encode()).hexdigest()[:10]}"
