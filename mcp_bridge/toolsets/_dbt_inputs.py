"""The old path of `mcp_bridge.toolsets.dbt.inputs`, kept only because the lineage toolset of issue 24 (branch
rc-lineage) still imports `as_result` and `derive` from here: delete this module once its imports name
`mcp_bridge.toolsets.dbt.inputs`."""

from mcp_bridge.toolsets.dbt.inputs import DbtInputs, as_result, derive

__all__ = ["DbtInputs", "as_result", "derive"]
