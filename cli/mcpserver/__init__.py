"""The MCP server (`undostore mcp`) and its relay."""
