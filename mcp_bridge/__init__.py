"""The MCP bridge: FastMCP sub-servers per toolset, mounted into one gateway."""
