"""`datasets:` the Snowfakery recipes Dagster generates into a warehouse, one asset per recipe."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from ade_platform.config.base import _Model


class DatasetRecipeSettings(_Model):
    """Per-recipe generation settings of the datasets assets (keyed by the recipe's stem in ade.yaml)."""

    options: dict[str, str | int | float | bool] = Field(default_factory=dict, description="--option values.")
    reps: int | None = Field(None, ge=1, description="Repetitions per materialization (default: one).")
    target_table: str | None = Field(None, description="Stop when this table has target_count rows.")
    target_count: int | None = Field(None, ge=1)
    seed: int | None = Field(None, description="Seed for reproducible values.")
    continuation: bool = Field(False, description="Chain runs: continue from the previous run and append.")


class DatasetSettings(_Model):
    recipes_dir: Path = Field(description="Folder of Snowfakery recipes; each *.recipe.yml is an asset.")
    warehouse: str = Field(description="Warehouse (by name) the generated tables are loaded into.")
    schema_name: str = Field("raw", alias="schema")
    recipes: dict[str, DatasetRecipeSettings] = Field(
        default_factory=dict, description="Keyed by recipe stem."
    )
    schedule_cron: str | None = Field(
        None, description="Cron of the dataset regeneration schedule (off if unset)."
    )
