"""The Dagster-free core: plain, typed functions the assets and MCP tools call."""
