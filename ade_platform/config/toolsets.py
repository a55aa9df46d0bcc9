"""The toolsets the gateway can serve: the one table every part that names a toolset reads."""

from __future__ import annotations

# Every toolset, declared once: its server name (the spec's), the package under mcp_bridge/toolsets/ whose
# `build(ctx)` makes its server (imported only when the toolset is enabled), and the specs' other names for it,
# accepted wherever a toolset is named (`ade mcp --server snowfakery-mcp`).
_TOOLSET_TABLE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("dbt-artifacts", "dbt.artifacts", ()),
    ("dbt-project", "dbt.project", ()),
    ("warehouse", "warehouse", ()),
    ("dbt-cloud", "dbt_cloud", ()),
    ("orchestrator", "orchestrators", ()),
    ("bi-api", "bi", ()),
    ("snowflake", "snowflake", ()),
    ("snowfakery", "snowfakery", ("snowfakery-mcp",)),
    ("lineage", "lineage", ()),
    ("incidents", "incidents", ()),
)
TOOLSETS = tuple(name for name, _, _ in _TOOLSET_TABLE)
TOOLSET_MODULES = {name: module for name, module, _ in _TOOLSET_TABLE}
SERVER_ALIASES = {alias: name for name, _, aliases in _TOOLSET_TABLE for alias in aliases}
