"""Second MCP clients (not FastMCP's) against the gateway."""
