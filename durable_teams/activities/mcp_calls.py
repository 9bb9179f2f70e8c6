"""The MCP activities: list a server's tools, call one of them. The worker holds the servers
(durable_teams/teams/mcp_servers.py); the workflow names them.

Error semantics are our own tools': a tool's error (`is_error`, or the server refusing the
call) comes back as an error `ToolResult` the model reads, recorded once. A server that cannot
be started or reached is tried again within the call, up to the server's `max_attempts` (safe:
nothing was sent), and then the model is told the tool did not run. A failure after the call
was sent (a timeout, a dropped connection, the server's process dying mid-call) may have left
the tool run, so like any tool it is not retried unless the server is declared
`idempotent=True`; the model is told it may or may not have run. Sessions: mcp_sessions.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping
from contextlib import AsyncExitStack
from typing import Any

import anyio
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.teams.mcp_servers import INSTALL_HINT, MCPServer, MCPStdio
from durable_teams.workflows.mcp_tools import MCPCall
from durable_teams.workflows.messages import ToolResult, ToolSpec
from durable_teams.workflows.tool_calls import TOOL_TIMEOUT

from .mcp_sessions import Lease, Sessions
from .tool_activities import MAX_RESULT_BYTES

CONNECT_BACKOFF_SECONDS = 0.5
CONNECTION_CLOSED = -32000
"""The SDK's error code for a request whose connection closed before an answer came."""


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
        self.sessions = Sessions()

    def _server(self, name: str) -> MCPServer:
        if name not in self.servers:
            known = ", ".join(sorted(self.servers)) or "none"
            raise ApplicationError(f"No MCP server named {name!r} on this worker (known: {known}).",
                                   type="UnknownMCPServer", non_retryable=True)
        return self.servers[name]

    async def close(self) -> None:
        """Close the worker's persistent sessions (it stops)."""
        await self.sessions.close()

    @activity.defn(name="list_mcp_tools")
    async def list_mcp_tools(self, server: str) -> list[ToolSpec]:
        """Every tool the server lists (all pages), as tool specs of that server."""
        definition = self._server(server)
        _error_class()
        try:
            async with self.sessions.connected(definition) as lease:
                tools: list[ToolSpec] = []
                cursor = None
                while True:  # asked of the server itself: a new conversation sees its tools now
                    page = await lease.client.list_tools(cursor=cursor, cache_mode="bypass")
                    tools += [ToolSpec(name=t.name, description=t.description or "",
                                       parameters=dict(t.input_schema), mcp_server=server,
                                       mcp_tool=t.name) for t in page.tools]
                    cursor = page.next_cursor
                    if not cursor:
                        return tools
        except Exception as err:
            raise listing_failure(definition, err) from err

    @activity.defn(name="call_mcp_tool")
    async def call_mcp_tool(self, req: MCPCall) -> ToolResult:
        """One call of one tool; see the module docstring for what is retried."""
        definition = self._server(req.server)
        _error_class()
        try:
            arguments = json.loads(req.arguments or "{}")
        except ValueError as err:
            return ToolResult(is_error=True, content=f"Error: the arguments are not valid JSON: {err}")
        if not isinstance(arguments, dict):
            return ToolResult(is_error=True, content="Error: the arguments must be a JSON object.")
        # the call's own deadline counts from the start, connecting included
        deadline = asyncio.get_running_loop().time() + req.timeout_seconds
        attempts = max(definition.max_attempts, 1)
        for attempt in range(1, attempts + 1):
            try:
                outcome = await self._attempt(definition, req, arguments, deadline)
            except NotSent as err:  # safe to try again, whatever the tool does
                if attempt == attempts:
                    return ToolResult(is_error=True, content=(
                        f"Error: MCP server {req.server!r} could not be reached ({attempt} "
                        f"attempts): {err}. {req.tool} did not run."))
                await asyncio.sleep(min(CONNECT_BACKOFF_SECONDS * 2 ** (attempt - 1), 10.0))
                continue
            if isinstance(outcome, ApplicationError):
                raise outcome
            return outcome
        raise AssertionError("unreachable")

    async def _attempt(self, definition: MCPServer, req: MCPCall, arguments: dict[str, Any],
                       deadline: float) -> ToolResult | ApplicationError:
        """Connect and send the call once. Raises NotSent when the server could not be
        reached, and an ApplicationError when the call failed after it was sent (then the
        workflow's retry policy decides: once, unless the server is idempotent). No deadline
        of our own on connecting: a scope around entering a per-call session would close
        before the session's task groups; the transport's timeouts and the activity's bound
        the wait."""
        outcome: ToolResult | ApplicationError | None = None
        try:
            async with AsyncExitStack() as stack:  # nothing raised in here but transport errors
                try:
                    lease = await stack.enter_async_context(self.sessions.connected(definition))
                except Exception as err:
                    raise NotSent(leaf_text(err)) from err
                outcome = await self._send(lease, req, arguments, deadline)
        except NotSent:
            raise
        except Exception as err:
            if outcome is None:  # sent, outcome unknown
                raise ApplicationError(f"{req.tool}: {leaf_text(err)}", type="MCPCallFailed") from err
            # else closing a per-call session failed after the outcome was known
        assert outcome is not None
        return outcome

    async def _send(self, lease: Lease, req: MCPCall, arguments: dict[str, Any],
                    deadline: float) -> ToolResult | ApplicationError:
        """The call's outcome: the server's answer, or the failure (to raise) that leaves it
        unknown whether the tool ran. Raises NotSent if the request provably never left."""
        try:
            with anyio.fail_after(max(deadline - asyncio.get_running_loop().time(), 0.001)):
                answer = await lease.client.call_tool(
                    req.tool, arguments, meta={"idempotency_key": req.idempotency_key})
            return _tool_result(answer)
        except _error_class() as err:
            if getattr(err, "code", None) == CONNECTION_CLOSED:  # not an answer: the server went away
                if await lease.lost():
                    why = lease.owned.failure if lease.owned and lease.owned.failure else err
                    raise NotSent(leaf_text(why)) from err
                return ApplicationError(f"the connection to MCP server {req.server!r} closed during "
                                        "the call", type="MCPCallFailed")
            # the server answered: refused the call, unknown tool
            message = getattr(getattr(err, "error", None), "message", None) or str(err)
            return ToolResult(is_error=True, content=f"Error: {req.tool}: {message}")
        except TimeoutError:
            return ApplicationError(f"{req.tool} did not finish within {req.timeout_seconds:g}s",
                                    type=TOOL_TIMEOUT)


class NotSent(Exception):
    """The server could not be reached: nothing of the call was sent to it."""


def leaf(err: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups."""
    while getattr(err, "exceptions", None):
        err = err.exceptions[0]  # type: ignore[attr-defined]
    return err


def leaf_text(err: BaseException) -> str:
    """The first real error inside anyio's exception groups, as `Type: message`."""
    err = leaf(err)
    return f"{type(err).__name__}: {err}"


def listing_failure(definition: MCPServer, err: BaseException) -> ApplicationError:
    """Why a server could not list its tools. A command that cannot be started is named, and
    not tried again (retrying will not make it exist); anything else is retried by Temporal
    within the server's bound (listing is read-only)."""
    if isinstance(definition, MCPStdio) and isinstance(leaf(err), FileNotFoundError | PermissionError
                                                       | NotADirectoryError):
        where = f" in {definition.cwd}" if definition.cwd else ""
        return ApplicationError(f"could not start {definition.command!r}{where}: {leaf_text(err)}",
                                type="MCPUnreachable", non_retryable=True)
    return ApplicationError(leaf_text(err), type="MCPUnreachable")


def _tool_result(answer: Any) -> ToolResult:
    text = content_text(answer.content, answer.structured_content)
    if len(text.encode()) > MAX_RESULT_BYTES:
        text = text.encode()[:MAX_RESULT_BYTES].decode(errors="ignore") + "\n[truncated]"
    if answer.is_error:
        return ToolResult(is_error=True, content=f"Error: {text}")
    return ToolResult(content=text)
