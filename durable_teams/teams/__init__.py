"""Defining teams: the builders, their checks, MCP server declarations, the graph."""
