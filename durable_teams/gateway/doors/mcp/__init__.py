"""Teams as MCP tools: /mcp and durable-teams mcp (the mcp extra; docs/mcp.md)."""
