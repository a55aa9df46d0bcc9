"""Static facts about Snowfakery recipes, read from their YAML without running them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def recipe_tables(recipe: Path, _seen: set[Path] | None = None) -> list[str]:
    """Names of the tables a recipe writes (every `object:`/`table:` declaration, includes followed)."""
    seen = _seen if _seen is not None else set()
    recipe = recipe.resolve()
    if recipe in seen:
        return []
    seen.add(recipe)
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            name = node.get("object", node.get("table"))
            if isinstance(name, str) and name not in found:
                found.append(name)
            include = node.get("include_file")
            if isinstance(include, str):
                for table in recipe_tables(recipe.parent / include, seen):
                    if table not in found:
                        found.append(table)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(recipe.read_text()) or [])
    return found


def recipe_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.recipe.yml")) + sorted(folder.glob("*.recipe.yaml"))
