"""Defining teams: the builders, their checks, MCP server declarations, the graph.

Beyond what `durable_teams` exports (`Agent`, `Supervisor`, `Swarm`, `handoff`, `tool`,
`Result`, `Budgets`, `get_stream_writer`), a team author finds here the other options of a team and its tools."""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_teams import _lazy_exports

_EXPORTS: dict[str, str] = {
    "CompiledTeam": "durable_teams.teams.builders",
    "TeamError": "durable_teams.workflows.definition_checks",
    "RoutingRule": "durable_teams.workflows.options",
    "Intent": "durable_teams.workflows.intents",
    "ModelCalls": "durable_teams.workflows.options",
    "MCPStdio": "durable_teams.teams.mcp_servers",
    "MCPHttp": "durable_teams.teams.mcp_servers",
    "RetryableToolError": "durable_teams.teams.tools",
    "current_idempotency_key": "durable_teams.teams.tools",
    "StreamWriteError": "durable_teams.teams.stream_writer",
    "team_graph": "durable_teams.teams.graph",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from durable_teams.teams.builders import CompiledTeam
    from durable_teams.teams.graph import team_graph
    from durable_teams.teams.mcp_servers import MCPHttp, MCPStdio
    from durable_teams.teams.stream_writer import StreamWriteError
    from durable_teams.teams.tools import RetryableToolError, current_idempotency_key
    from durable_teams.workflows.definition_checks import TeamError
    from durable_teams.workflows.intents import Intent
    from durable_teams.workflows.options import ModelCalls, RoutingRule
