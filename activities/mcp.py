"""The MCP activities: list a server's tools, call one of them. The worker holds the servers
(durable_teams/mcp.py); the workflow names them.

Error semantics are our own tools': a tool's error (`is_error`, or the server refusing the
call) comes back as an error `ToolResult` the model reads, recorded once; a transport failure
(the server cannot be started or reached) raises, and Temporal retries it within the tool's
`max_attempts`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.mcp import INSTALL_HINT, MCPServer
from durable_teams.workflows.mcp import MCPCall
from durable_teams.workflows.messages import ToolResult, ToolSpec

from .tools import MAX_RESULT_BYTES


def _error_class() -> type[Exception]:
    try:
        from mcp.shared.exceptions import MCPError
    except ImportError as err:
        raise ApplicationError(INSTALL_HINT, type="MCPNotInstalled", non_retryable=True) from err
    return MCPError


def content_text(content: Iterable[Any], structured: Any = None) -> str:
    """An MCP tool result as the text the model reads: text blocks joined; other blocks named."""
    parts = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource" and getattr(block.resource, "text", None) is not None:
            parts.append(block.resource.text)
        else:
            parts.append(f"[{kind or 'content'} {getattr(block, 'mime_type', '') or ''}]".replace(" ]", "]"))
    if not parts and structured is not None:
        parts.append(json.dumps(structured, default=str))
    return "\n".join(parts)


class MCPActivities:
    """`list_mcp_tools` and `call_mcp_tool`, bound to the worker's servers by name."""

    def __init__(self, servers: Mapping[str, MCPServer]):
        self.servers = dict(servers)

    def _server(self, name: str) -> MCPServer:
        if name not in self.servers:
            known = ", ".join(sorted(self.servers)) or "none"
            raise ApplicationError(f"No MCP server named {name!r} on this worker (known: {known}).",
                                   type="UnknownMCPServer", non_retryable=True)
        return self.servers[name]

    @activity.defn(name="list_mcp_tools")
    async def list_mcp_tools(self, server: str) -> list[ToolSpec]:
        """Every tool the server lists (all pages), as tool specs of that server."""
        definition = self._server(server)
        _error_class()
        tools: list[ToolSpec] = []
        async with definition.client() as client:
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += [ToolSpec(name=t.name, description=t.description or "",
                                   parameters=dict(t.input_schema), mcp_server=server, mcp_tool=t.name)
                          for t in page.tools]
                cursor = page.next_cursor
                if not cursor:
                    return tools

    @activity.defn(name="call_mcp_tool")
    async def call_mcp_tool(self, req: MCPCall) -> ToolResult:
        """One call of one tool; see the module docstring for what is retried."""
        definition = self._server(req.server)
        mcp_error = _error_class()
        try:
            arguments = json.loads(req.arguments or "{}")
        except ValueError as err:
            return ToolResult(is_error=True, content=f"Error: the arguments are not valid JSON: {err}")
        if not isinstance(arguments, dict):
            return ToolResult(is_error=True, content="Error: the arguments must be a JSON object.")
        async with definition.client() as client:
            try:
                result = await client.call_tool(
                    req.tool, arguments, meta={"idempotency_key": req.idempotency_key})
            except mcp_error as err:  # the server answered: refused the call, unknown tool
                message = getattr(getattr(err, "error", None), "message", None) or str(err)
                return ToolResult(is_error=True, content=f"Error: {req.tool}: {message}")
        text = content_text(result.content, result.structured_content)
        if len(text.encode()) > MAX_RESULT_BYTES:
            text = text.encode()[:MAX_RESULT_BYTES].decode(errors="ignore") + "\n[truncated]"
        return ToolResult(content=text if not result.is_error else f"Error: {text}",
                          is_error=bool(result.is_error))
