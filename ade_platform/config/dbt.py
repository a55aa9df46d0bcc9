"""`dbt:` the local dbt project the platform builds and reads artifacts from."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ade_platform.config.base import _Model


class DbtSettings(_Model):
    project_dir: Path = Field(description="The dbt project root.")
    profiles_dir: Path | None = None
    target: str | None = None
    target_path: Path | None = Field(
        None,
        description="The folder the team's own dbt runs (a scheduler, a terminal, CI) write their artifacts to: "
        "ADE watches it and publishes what they write; default <project_dir>/target. ADE's own dbt commands "
        "write under <home>/dbt/ instead, so neither overwrites the other's artifacts.",
    )
    warehouse: str | None = Field(None, description="Warehouse (by name) this project builds into.")
    log_path: Path | None = Field(
        None,
        description="Where dbt runs outside ADE write dbt.log (their --log-path); default <project_dir>/logs. "
        "The dbt tools read its end to report an invocation that failed before writing artifacts.",
    )
    artifact_roots: list[Path] = Field(
        default_factory=list,
        description="More folders an artifact path (run_results_path, manifest_path, ...) may point into, "
        "e.g. one target folder per environment.",
    )
