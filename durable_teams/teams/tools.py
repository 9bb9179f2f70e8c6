"""The `@tool` API: a function becomes a tool with a JSON schema and its options, checked where
it is defined; a `ToolRegistry` holds a team's tools by name for the worker that runs them
(activities/tool_activities.py). Defining a tool loads no Temporal worker code and no model client.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.messages import ToolSpec

from .tool_checks import attempts, check_cache, check_numbers, check_signature, described, tool_name

__all__ = ["RetryableToolError", "Tool", "ToolRegistry", "current_idempotency_key", "tool"]

IDEMPOTENCY_KEY: contextvars.ContextVar[str] = contextvars.ContextVar("idempotency_key", default="")
"""Set by the tool activity around each call (activities/tool_activities.py)."""


def current_idempotency_key() -> str:
    """The running tool call's idempotency key: the same for every retry of one call, different
    for every other call, so a tool with side effects can make a retry harmless."""
    return IDEMPOTENCY_KEY.get()


class RetryableToolError(Exception):
    """Raise from a tool for an infrastructure failure that Temporal should retry (only a tool
    declared `idempotent=True` is retried; any other reports the failure to the model)."""


@dataclass
class Tool:
    """A function and its spec; calling the tool calls the function."""

    fn: Callable[..., Any]
    spec: ToolSpec
    cache_seconds: float | None = None
    """Reuse a result for the same arguments this long (an idempotent tool only), kept in the
    worker's memory store; the worker alone needs it, so it is not in the spec."""

    @functools.cached_property
    def parameters(self) -> Mapping[str, inspect.Parameter]:
        """The function's parameters, read once (not on every call)."""
        return inspect.signature(self.fn).parameters

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    local: bool = False,
    needs_approval: bool = False,
    return_direct: bool = False,
    idempotent: bool = False,
    timeout_seconds: float = 60.0,
    max_attempts: int | None = None,
    retry_interval_seconds: float = 1.0,
    task_queue: str | None = None,
    cache_seconds: float | None = None,
    interrupt_before: bool = False,
    interrupt_after: bool = False,
) -> Any:
    """Make a function a tool: `@tool`, `@tool(idempotent=True)` or `tool(fn)`.

    A tool runs at most once per call unless it is declared `idempotent=True` (safe to run
    twice); then it is retried after a failure or a timeout, up to `max_attempts` (default 3)
    runs. `cache_seconds` (an idempotent tool only) reuses a result for the same arguments,
    across conversations, for that long. `interrupt_before` / `interrupt_after` pause every call
    for a person before it runs / after it ran, in every team (docs/time-travel.md,
    "Breakpoints"). A definition that cannot work raises `TeamError` here.
    """

    def wrap(f: Callable[..., Any] | Tool) -> Tool:
        if isinstance(f, Tool):  # re-wrapping a tool gives it new options
            f = f.fn
        tool_id = tool_name(f, name)
        check_signature(f, tool_id)
        check_numbers(tool_id, timeout_seconds, retry_interval_seconds, task_queue)
        doc, parameters = described(f, tool_id)
        context_params = [p for p in ("context_variables",) if p in inspect.signature(f).parameters]
        check_cache(tool_id, cache_seconds, idempotent, bool(context_params))
        spec = ToolSpec(
            name=tool_id, description=description if description is not None else doc,
            parameters=parameters, context_params=context_params,
            max_attempts=attempts(tool_id, idempotent, max_attempts, needs_approval),
            # the options as given
            local=local, needs_approval=needs_approval, return_direct=return_direct,
            idempotent=idempotent, timeout_seconds=timeout_seconds,
            retry_interval_seconds=retry_interval_seconds, task_queue=task_queue,
            interrupt_before=interrupt_before, interrupt_after=interrupt_after,
        )
        return Tool(f, spec, cache_seconds)

    return wrap(fn) if fn is not None else wrap


class ToolRegistry:
    """Tools by name, on the worker. Plain functions are wrapped with `tool`."""

    def __init__(self, *tools: Tool | Callable[..., Any]):
        self._tools: dict[str, Tool] = {}
        self.mcp_servers: dict[str, Any] = {}
        """MCP server definitions by name (durable_teams/teams/mcp_servers.py), for the MCP activities."""
        self.register(*tools)

    def add_mcp(self, *servers: Any) -> None:
        """Add MCP server definitions; the same name for a different server is a ValueError."""
        for server in servers:
            existing = self.mcp_servers.get(server.name)
            if existing is not None and not existing.same_server(server):
                raise ValueError(f"two different MCP servers are named {server.name!r}")
            self.mcp_servers[server.name] = server

    def merge(self, other: ToolRegistry) -> None:
        """Add every tool and MCP server of `other`."""
        self.register(*other._tools.values())
        self.add_mcp(*other.mcp_servers.values())

    def register(self, *tools: Tool | Callable[..., Any]) -> None:
        """Add tools; the same name for a different function is a `TeamError`."""
        for item in tools:
            t = item if isinstance(item, Tool) else tool(item)
            existing = self._tools.get(t.spec.name)
            if existing is not None and existing.fn is not t.fn:
                raise TeamError(f"two different functions are registered as tool {t.spec.name!r}")
            self._tools[t.spec.name] = t

    def get(self, name: str) -> Tool:
        return self._tools[name]

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> dict[str, ToolSpec]:
        return {name: t.spec for name, t in self._tools.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._tools
