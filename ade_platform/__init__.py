"""ADE Platform: Dagster-materialized metadata of a data stack, served to agents over MCP."""
