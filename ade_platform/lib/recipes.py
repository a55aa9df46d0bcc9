"""Static facts about Snowfakery recipes, read from their YAML without running them."""

from __future__ import annotations

from pathlib import Path

from ade_platform.lib.snowfakery.analysis import analyze, table_names
from ade_platform.lib.snowfakery.policy import RunPolicy

# Recipes in the datasets folder are configured by the operator: every plugin is acceptable here.
_TRUSTED = RunPolicy(allowed_plugins=("*",), allow_network=True)


def recipe_tables(recipe: Path) -> list[str]:
    """Names of the tables a recipe writes (macros and include files followed; hidden `__` objects left out)."""
    recipe = recipe.resolve()
    model = analyze(
        recipe.read_text(encoding="utf-8"), recipe.name, recipe.parent, Path(recipe.anchor), _TRUSTED
    )
    return table_names(model)


def recipe_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.recipe.yml")) + sorted(folder.glob("*.recipe.yaml"))


def recipe_stem(recipe: Path) -> str:
    """The recipe's name without `.recipe.yml`: its key in the datasets settings and in asset names."""
    return recipe.name.split(".")[0]
