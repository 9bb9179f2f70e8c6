"""Teams as MCP tools: `/mcp` over streamable HTTP and `durable-teams mcp` over stdio (door.py;
the `mcp` extra; docs/mcp.md)."""

from __future__ import annotations

import importlib.util

from starlette.routing import Route

from durable_teams.gateway.core.mounts import Mount, Serving
from durable_teams.gateway.core.team_cards import descriptions


def mount(serving: Serving) -> Mount | None:
    """A tool per team at /mcp (scoped tokens: their threads); None without the `mcp` extra."""
    if importlib.util.find_spec("mcp") is None:
        return None
    from durable_teams.gateway.doors.mcp.door import McpDoor

    app, running = McpDoor(serving.gateway, descriptions(serving.cards)).http_app()
    return Mount([Route("/mcp", app, methods=["GET", "POST", "DELETE"])], lifespans=[running])
