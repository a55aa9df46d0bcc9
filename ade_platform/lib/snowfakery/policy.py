"""The run policy: limits and permissions every sandboxed run is held to (built from settings)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

# Plugins (and plugin functions) that only work against a live Salesforce org, over the network.
ORG_PLUGINS = ("SalesforceQuery", "SOQLDataset")
ORG_FUNCTIONS = ("Salesforce.ProfileId",)

OUTPUT_FORMATS = ("txt", "json", "csv", "sql", "dot", "svg", "svgz", "png", "jpeg", "jpg", "ps")
DIAGRAM_FORMATS = ("dot", "svg", "svgz", "png", "jpeg", "jpg", "ps")
GRAPHVIZ_FORMATS = ("svg", "svgz", "png", "jpeg", "jpg", "ps")
BINARY_FORMATS = ("svgz", "png", "jpeg", "jpg", "ps")


@dataclass(frozen=True)
class RunPolicy:
    timeout_seconds: float = 60
    max_reps: int = 1000
    max_target_count: int = 100_000
    max_rows: int = 1_000_000
    max_output_bytes: int = 200_000_000
    max_inline_chars: int = 20_000
    max_recipe_bytes: int = 1_000_000
    max_memory_mb: int = 2048
    max_runs_kept: int = 50
    allow_dburl: bool = False
    allow_network: bool = False
    allowed_plugins: tuple[str, ...] = field(default=("snowfakery.standard_plugins.*",))

    def plugin_problem(self, name: str) -> tuple[str, str] | None:
        """(kind, message) when a recipe may not declare this plugin, else None."""
        short = name.rsplit(".", 1)[-1]
        if short in ORG_PLUGINS and not self.allow_network:
            return (
                "SalesforceOrgRequired",
                f"plugin {name} queries a live Salesforce org; this server allows no network or org access",
            )
        if not any(fnmatch.fnmatchcase(name, pattern) for pattern in self.allowed_plugins):
            return (
                "PluginNotAllowed",
                f"plugin {name} is not in the server's plugin allow-list (snowfakery.allowed_plugins)",
            )
        return None

    def function_problem(self, name: str) -> tuple[str, str] | None:
        if name in ORG_FUNCTIONS and not self.allow_network:
            return (
                "SalesforceOrgRequired",
                f"{name} looks up records in a live Salesforce org; this server allows no network or org access",
            )
        return None
