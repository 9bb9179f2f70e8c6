"""MCP servers as tool sources (`pip install 'durable-teams[mcp]'`, the official `mcp` SDK).

    files = MCPStdio("files", "python", ["files_server.py"], needs_approval=["delete_file"])
    search = MCPHttp("search", "http://127.0.0.1:8000/mcp", headers={"Authorization": "..."})
    agent = Agent("clerk", "You manage files.", mcp=[files, search])

The team carries only each server's name and options (`MCPServerSpec`); how to reach it
(command, URL, headers with secrets) and how sessions are kept stay here, on the worker, and
never enter history. By default a worker keeps one session per server, opened on first use
and reopened after the server dies (`session="persistent"`, activities/mcp_sessions.py);
`session="per_call"` opens a fresh one for every listing and call (for stdio, a new process).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

from durable_teams.workflows.messages import MCPServerSpec

INSTALL_HINT = "MCP tools need the mcp package: pip install 'durable-teams[mcp]'"

SessionMode = Literal["persistent", "per_call"]


class _Server:
    """What every MCP server definition has: a name (unique on the worker) and options."""

    def __init__(self, name: str, *, tool_prefix: str = "", allowed_tools: Sequence[str] | None = None,
                 needs_approval: bool | Sequence[str] = False, timeout_seconds: float = 60.0,
                 max_attempts: int = 5, idempotent: bool = False,
                 retry_interval_seconds: float = 1.0, session: SessionMode = "persistent"):
        if session not in ("persistent", "per_call"):
            raise ValueError(f"MCP server {name!r}: session must be 'persistent' or 'per_call', "
                             f"not {session!r}")
        self.name = name
        self.tool_prefix = tool_prefix
        """Put before each tool's name, to keep two servers' tools apart ("files_")."""
        self.allowed_tools = allowed_tools
        self.needs_approval = needs_approval
        """True: a person approves every call; a list: calls of these tools (server names)."""
        self.timeout_seconds = timeout_seconds
        self.max_attempts = max_attempts
        """Attempts to reach the server for each call or listing (a tool's own error, or a
        failure after the call was sent, is not retried unless `idempotent`)."""
        self.idempotent = idempotent
        """The server's tools are safe to run twice (Temporal retries a call that failed after
        it was sent, up to `max_attempts`)."""
        self.retry_interval_seconds = retry_interval_seconds
        """Wait before retrying an idempotent call (doubling each time)."""
        self.session: SessionMode = session
        """"persistent": one session per worker, kept across calls (a stateful server keeps
        its state); "per_call": a new session for each listing and call."""

    def spec(self) -> MCPServerSpec:
        approval = self.needs_approval
        return MCPServerSpec(
            name=self.name, tool_prefix=self.tool_prefix,
            allowed_tools=None if self.allowed_tools is None else list(self.allowed_tools),
            needs_approval=approval if isinstance(approval, bool) else list(approval),
            timeout_seconds=self.timeout_seconds, max_attempts=self.max_attempts,
            idempotent=self.idempotent, retry_interval_seconds=self.retry_interval_seconds)

    def client(self) -> AbstractAsyncContextManager[Any]:
        """A connected `mcp.Client` (an async context manager)."""
        raise NotImplementedError

    def same_server(self, other: _Server) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)


class MCPStdio(_Server):
    """An MCP server the worker starts as a subprocess and talks to over stdin/stdout."""

    def __init__(self, name: str, command: str, args: Sequence[str] = (), *,
                 env: Mapping[str, str] | None = None, cwd: str | None = None, **options: Any):
        super().__init__(name, **options)
        self.command, self.args, self.env, self.cwd = command, list(args), env, cwd

    def client(self) -> AbstractAsyncContextManager[Any]:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        return Client(StdioServerParameters(command=self.command, args=self.args,
                                            env=dict(self.env) if self.env else None, cwd=self.cwd))


class MCPHttp(_Server):
    """An MCP server reached over streamable HTTP. `headers` (tokens) stay on the worker."""

    def __init__(self, name: str, url: str, *, headers: Mapping[str, str] | None = None,
                 **options: Any):
        super().__init__(name, **options)
        self.url, self.headers = url, dict(headers or {})

    def client(self) -> AbstractAsyncContextManager[Any]:
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = create_mcp_http_client(headers=self.headers) if self.headers else None
        return Client(streamable_http_client(self.url, http_client=http))


MCPServer = _Server
"""Either kind of server definition."""
