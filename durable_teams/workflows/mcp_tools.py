"""MCP tools inside the workflow: each server's tool list is fetched once per conversation by
the `list_mcp_tools` activity and recorded in the team spec the conversation carries (across
continue-as-new too), so a replay never depends on what a server says later. Listed tools are
then ordinary tools of the team: offered to the model, approved by a person when marked, and
run one activity per call (`call_mcp_tool`).

A server whose tools change while a conversation runs is handled deliberately: the
conversation keeps the list it recorded; a call to a tool the server has dropped comes back to
the model as an error tool message (the server's own answer), and tools added later appear
in new conversations.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from .builtins import BUILTINS
    from .messages import AgentSpec, MCPServerSpec, TeamSpec, ToolRequest, ToolSpec
    from .roster import handoff_targets
    from .wire_base import Wire

LIST_ACTIVITY = "list_mcp_tools"
CALL_ACTIVITY = "call_mcp_tool"
LIST_TIMEOUT = timedelta(seconds=60)


class MCPCall(Wire):
    """Input of `call_mcp_tool`: one call of one server's tool."""

    server: str
    tool: str
    arguments: str
    idempotency_key: str
    agent: str
    timeout_seconds: float = 60.0


class MCPToolsError(ValueError):
    """A listed tool cannot join the team (its name is taken)."""


def _agents(team: TeamSpec) -> list[AgentSpec]:
    """This team's own agents with MCP servers (a nested team lists in its own workflow)."""
    return [a for a in team.agents.values() if a.team is None and a.mcp]


def unlisted(team: TeamSpec) -> dict[str, MCPServerSpec]:
    """Servers whose tools this conversation has not listed yet, by name (first spec wins)."""
    found: dict[str, MCPServerSpec] = {}
    for agent in _agents(team):
        for server in agent.mcp:
            if server.listed is None:
                found.setdefault(server.name, server)
    return found


def record(team: TeamSpec, server: str, tools: list[ToolSpec]) -> None:
    """Keep what `server` listed in every agent's spec of it."""
    for agent in _agents(team):
        for spec in agent.mcp:
            if spec.name == server and spec.listed is None:
                spec.listed = list(tools)


def offered(server: MCPServerSpec) -> list[ToolSpec]:
    """The recorded tools of `server` as this agent may use them (filter, prefix, options)."""
    tools = []
    for listed in server.listed or []:
        remote = listed.mcp_tool or listed.name
        if server.allowed_tools is not None and remote not in server.allowed_tools:
            continue
        approval = server.needs_approval
        tools.append(listed.model_copy(update={
            "name": _tool_name(server.tool_prefix + remote),
            "mcp_server": server.name,
            "mcp_tool": remote,
            "needs_approval": approval if isinstance(approval, bool) else remote in approval,
            "timeout_seconds": server.timeout_seconds,
            "max_attempts": server.max_attempts,
            "idempotent": server.idempotent,
            "retry_interval_seconds": server.retry_interval_seconds,
        }))
    return tools


def expand(team: TeamSpec) -> None:
    """Make every recorded MCP tool a tool of the team and of its agent (idempotent)."""
    for agent in _agents(team):
        taken = set(BUILTINS) | set(handoff_targets(team, agent.name))
        for server in agent.mcp:
            for tool in offered(server):
                existing = team.tools.get(tool.name)
                if tool.name in taken or (existing is not None and existing != tool):
                    raise MCPToolsError(
                        f"MCP server {server.name!r} offers a tool named {tool.name!r}, a name "
                        f"agent {agent.name!r} already has; give the server a tool_prefix")
                team.tools[tool.name] = tool
                if tool.name not in agent.tools:
                    agent.tools.append(tool.name)


def _tool_name(name: str) -> str:
    """A name the model API accepts (letters, digits, `_`, `-`; at most 64)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", name)[:64]


async def list_tools(team: TeamSpec) -> None:
    """List each not yet listed server's tools (one activity each), record them and offer
    them. A server that cannot list its tools, or a name clash, ends the conversation with a
    clear, non-retryable error rather than running agents without the tools they were given."""
    for name, server in unlisted(team).items():
        try:
            tools = await workflow.execute_activity(
                LIST_ACTIVITY, name, result_type=list[ToolSpec],
                start_to_close_timeout=LIST_TIMEOUT, summary=f"mcp: list tools of {name}",
                retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1),
                                         maximum_attempts=server.max_attempts))
        except ActivityError as err:
            cause = err.cause.message if isinstance(err.cause, ApplicationError) else str(err.cause)
            raise ApplicationError(f"MCP server {name!r} could not list its tools: {cause}",
                                   type="MCPUnavailable", non_retryable=True) from err
        record(team, name, tools)
    try:
        expand(team)
    except MCPToolsError as err:
        raise ApplicationError(str(err), type="InvalidTeam", non_retryable=True) from err


def activity_for(spec: ToolSpec, request: ToolRequest) -> tuple[str, Any]:
    """The activity that runs a tool call, and its input: `run_tool`, or an MCP server's."""
    if spec.mcp_server is None:
        return "run_tool", request
    return CALL_ACTIVITY, MCPCall(server=spec.mcp_server, tool=spec.mcp_tool or spec.name,
                                  arguments=request.arguments, agent=request.agent,
                                  idempotency_key=request.idempotency_key,
                                  timeout_seconds=spec.timeout_seconds)
