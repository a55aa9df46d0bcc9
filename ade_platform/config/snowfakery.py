"""`snowfakery:` the snowfakery toolset's recipe workspace and the limits every run is held to."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ade_platform.config.base import _Model


class SnowfakerySettings(_Model):
    """The snowfakery toolset: where recipes live, and the limits every run is held to."""

    workspace_root: Path | None = Field(None, description="Recipe workspace; default <home>/snowfakery.")
    runs_dir: Path | None = Field(
        None, description="Server-managed run outputs; default <home>/snowfakery-runs."
    )
    docs_dir: Path | None = Field(None, description="Serve these docs/, schema/, examples/ instead of ours.")
    max_reps: int = Field(1000, ge=1)
    max_target_count: int = Field(100_000, ge=1)
    max_rows: int = Field(1_000_000, ge=1, description="Rows one run may write, all tables together.")
    timeout_seconds: float = Field(60, gt=0, le=86_400)
    max_output_bytes: int = Field(200_000_000, ge=1024, description="Largest file one run may write.")
    max_inline_chars: int = Field(
        20_000, ge=100, description="Output returned inline; the rest is a resource."
    )
    max_recipe_bytes: int = Field(1_000_000, ge=100)
    max_memory_mb: int = Field(2048, ge=0, description="Address-space limit of a run (0 = none).")
    max_runs_kept: int = Field(50, ge=1, description="Run folders kept; older ones are deleted.")
    allow_dburl: bool = Field(False, description="Allow run_recipe to write to a database URL.")
    allow_network: bool = Field(False, description="Allow recipes and plugins to open network connections.")
    allowed_plugins: list[str] = Field(
        default_factory=lambda: ["snowfakery.standard_plugins.*"],
        description="Plugins/providers a recipe may declare (fnmatch patterns).",
    )
