"""The worker's tool registry and the tool activities.

A tool's failure that the model should see (bad arguments, an exception in the function) comes
back as data, an error `ToolResult`, recorded once and never retried. Only `RetryableToolError`
(an infrastructure failure the tool's author wants retried) raises and lets Temporal retry.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.workflows.messages import ToolRequest, ToolResult, ToolSpec

from .schema import ToolArgumentsError, function_schema, validate_arguments

MAX_RESULT_BYTES = 512 * 1024
"""Tool output above this is truncated with a note the model sees (Temporal rejects payloads
over 2 MB, and a rejected activity result would be retried to no end)."""

_idempotency_key: contextvars.ContextVar[str] = contextvars.ContextVar("idempotency_key", default="")


def current_idempotency_key() -> str:
    """The running tool call's idempotency key (workflow id + tool call id): stable across
    retries, so a tool with side effects can make an at-least-once retry harmless."""
    return _idempotency_key.get()


class RetryableToolError(Exception):
    """Raise from a tool for an infrastructure failure that Temporal should retry."""


@dataclass
class Result:
    """What a tool may return instead of a plain value (the Swarm cookbook's `Result`)."""

    value: str = ""
    agent: str | None = None
    """Hand the conversation to this agent (an object with a `name`, such as an `Agent`, is
    accepted too and stands for that name)."""
    context_variables: dict[str, Any] = field(default_factory=dict)
    """Updates to the conversation's context variables."""


@dataclass
class Tool:
    """A function and its spec; calling the tool calls the function."""

    fn: Callable[..., Any]
    spec: ToolSpec

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
    timeout_seconds: float = 60.0,
    max_attempts: int = 5,
    task_queue: str | None = None,
) -> Any:
    """Make a function a tool: `@tool`, `@tool(local=True)` or `tool(fn)`."""

    def wrap(f: Callable[..., Any] | Tool) -> Tool:
        if isinstance(f, Tool):  # re-wrapping a tool gives it new options
            f = f.fn
        doc, parameters = function_schema(f)
        params = inspect.signature(f).parameters
        spec = ToolSpec(
            name=name or str(getattr(f, "__name__", type(f).__name__)),
            description=description if description is not None else doc,
            parameters=parameters,
            local=local,
            needs_approval=needs_approval,
            return_direct=return_direct,
            context_params=["context_variables"] if "context_variables" in params else [],
            timeout_seconds=timeout_seconds,
            max_attempts=max_attempts,
            task_queue=task_queue,
        )
        return Tool(f, spec)

    return wrap(fn) if fn is not None else wrap


class ToolRegistry:
    """Tools by name, on the worker. Plain functions are wrapped with `tool`."""

    def __init__(self, *tools: Tool | Callable[..., Any]):
        self._tools: dict[str, Tool] = {}
        self.register(*tools)

    def register(self, *tools: Tool | Callable[..., Any]) -> None:
        """Add tools; the same name for a different function is a ValueError."""
        for item in tools:
            t = item if isinstance(item, Tool) else tool(item)
            existing = self._tools.get(t.spec.name)
            if existing is not None and existing.fn is not t.fn:
                raise ValueError(f"two different functions are registered as tool {t.spec.name!r}")
            self._tools[t.spec.name] = t

    def get(self, name: str) -> Tool:
        return self._tools[name]

    def names(self) -> list[str]:
        return list(self._tools)

    def specs(self) -> dict[str, ToolSpec]:
        return {name: t.spec for name, t in self._tools.items()}

    def __contains__(self, name: object) -> bool:
        return name in self._tools


def _content(value: Any) -> str:
    """A tool's return value as the text the model reads."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, default=str)


def _as_result(value: Any) -> ToolResult:
    if not isinstance(value, Result):
        return ToolResult(content=_content(value))
    agent = value.agent if value.agent is None else getattr(value.agent, "name", value.agent)
    # A JSON round trip keeps the updates serialisable: an unencodable activity result would
    # be retried to no end.
    updates = json.loads(json.dumps(value.context_variables, default=str))
    return ToolResult(content=_content(value.value), handoff_to=agent, context_updates=updates)


def _bounded(result: ToolResult) -> ToolResult:
    size = len(result.content.encode())
    if size <= MAX_RESULT_BYTES:
        return result
    kept = result.content.encode()[:MAX_RESULT_BYTES].decode(errors="ignore")
    note = f"\n[truncated: the tool returned {size:,} bytes; only the first {MAX_RESULT_BYTES:,} are shown]"
    return result.model_copy(update={"content": kept + note})


async def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Await an async tool; run a sync one in a thread, so a slow tool never blocks the
    worker's event loop (to_thread copies the context: current_idempotency_key() works)."""
    if inspect.iscoroutinefunction(fn):
        return await fn(**kwargs)
    value = await asyncio.to_thread(fn, **kwargs)
    if inspect.isawaitable(value):  # an async callable object or a partial of one
        value = await value
    return value


class ToolActivities:
    """The tool activities, bound to the worker's registry."""

    def __init__(self, registry: ToolRegistry):
        self.registry = registry

    async def _run(self, req: ToolRequest) -> ToolResult:
        if req.tool not in self.registry:
            available = ", ".join(self.registry.names()) or "none"
            return ToolResult(is_error=True, content=f"Error: unknown tool {req.tool!r}. Available: {available}.")
        t = self.registry.get(req.tool)
        try:
            kwargs = validate_arguments(t.fn, req.arguments, tool_name=req.tool)
        except ToolArgumentsError as err:
            return ToolResult(is_error=True, content=f"Error: {err}")
        params = inspect.signature(t.fn).parameters
        if "context_variables" in params:
            kwargs["context_variables"] = copy.deepcopy(req.context)
        if "idempotency_key" in params:
            kwargs["idempotency_key"] = req.idempotency_key
        token = _idempotency_key.set(req.idempotency_key)
        try:
            result = _as_result(await _call(t.fn, kwargs))
        except RetryableToolError as err:
            raise ApplicationError(f"{req.tool}: {err}", type="RetryableToolError") from err
        except Exception as err:  # the model should see what went wrong, once
            activity.logger.warning("tool %s failed", req.tool, exc_info=True)
            result = ToolResult(is_error=True, content=f"Error: {type(err).__name__}: {err}")
        finally:
            _idempotency_key.reset(token)
        return _bounded(result)

    @activity.defn(name="run_tool")
    async def run_tool(self, req: ToolRequest) -> ToolResult:
        """Run one tool call (a regular activity: own retries, timeout, task queue)."""
        return await self._run(req)

    @activity.defn(name="run_local_tool")
    async def run_local_tool(self, req: ToolRequest) -> ToolResult:
        """Run one tool call marked `local=True`, as a local activity (no extra round trip)."""
        return await self._run(req)
