"""The worker's tool registry and the tool activities.

A tool's failure that the model should see (bad arguments, an exception in the function, a
value that cannot be sent) comes back as data, an error `ToolResult`, recorded once and never
retried. Only `RetryableToolError` (an infrastructure failure the tool's author wants retried)
raises, and Temporal retries it only for a tool declared `idempotent=True`: every other tool
runs at most once per call.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.workflows.definition_checks import TeamError
from durable_teams.workflows.messages import ToolRequest, ToolResult, ToolSpec
from durable_teams.workflows.tool_calls import TOOL_TIMEOUT

from .schema import ToolArgumentsError, function_schema, validate_arguments
from .tool_checks import attempts, check_numbers, check_signature, tool_name
from .tool_results import Result, ResultError, to_result, unsendable
from .tool_threads import Escaped, in_thread

__all__ = ["Result", "RetryableToolError", "Tool", "ToolActivities", "ToolRegistry",
           "current_idempotency_key", "tool"]

MAX_RESULT_BYTES = 512 * 1024
"""Tool output above this is truncated with a note the model sees (Temporal rejects payloads
over 2 MB, and a rejected activity result would be retried to no end)."""

log = logging.getLogger(__name__)

_idempotency_key: contextvars.ContextVar[str] = contextvars.ContextVar("idempotency_key", default="")


def current_idempotency_key() -> str:
    """The running tool call's idempotency key: the same for every retry of one call, different
    for every other call, so a tool with side effects can make a retry harmless."""
    return _idempotency_key.get()


class RetryableToolError(Exception):
    """Raise from a tool for an infrastructure failure that Temporal should retry (only a tool
    declared `idempotent=True` is retried; any other reports the failure to the model)."""


@dataclass
class Tool:
    """A function and its spec; calling the tool calls the function."""

    fn: Callable[..., Any]
    spec: ToolSpec

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
) -> Any:
    """Make a function a tool: `@tool`, `@tool(idempotent=True)` or `tool(fn)`.

    A tool runs at most once per call unless it is declared `idempotent=True` (safe to run
    twice); then it is retried after a failure or a timeout, up to `max_attempts` (default 3)
    runs. A definition that cannot work raises `TeamError` here.
    """

    def wrap(f: Callable[..., Any] | Tool) -> Tool:
        if isinstance(f, Tool):  # re-wrapping a tool gives it new options
            f = f.fn
        tool_id = tool_name(f, name)
        check_signature(f, tool_id)
        check_numbers(tool_id, timeout_seconds, retry_interval_seconds, task_queue)
        try:
            doc, parameters = function_schema(f)
        except Exception as err:  # pydantic cannot build a schema for some annotation
            raise TeamError(f"tool {tool_id!r}: its parameters cannot be described as a JSON "
                            f"schema ({type(err).__name__}: {err})") from None
        params = inspect.signature(f).parameters
        spec = ToolSpec(
            name=tool_id,
            description=description if description is not None else doc,
            parameters=parameters,
            local=local,
            needs_approval=needs_approval,
            return_direct=return_direct,
            context_params=["context_variables"] if "context_variables" in params else [],
            timeout_seconds=timeout_seconds,
            max_attempts=attempts(tool_id, idempotent, max_attempts, needs_approval),
            idempotent=idempotent,
            retry_interval_seconds=retry_interval_seconds,
            task_queue=task_queue,
        )
        return Tool(f, spec)

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


def _bounded(result: ToolResult) -> ToolResult:
    size = len(result.content.encode())
    if size <= MAX_RESULT_BYTES:
        return result
    kept = result.content.encode()[:MAX_RESULT_BYTES].decode(errors="ignore")
    note = f"\n[truncated: the tool returned {size:,} bytes; only the first {MAX_RESULT_BYTES:,} are shown]"
    return result.model_copy(update={"content": kept + note})


async def _call(fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Await an async tool; run a sync one in a thread, so a slow tool never blocks the
    worker's event loop. A BaseException from the tool comes out as `Escaped`."""
    try:
        if inspect.iscoroutinefunction(fn):
            return await fn(*args, **kwargs)
        value = await in_thread(fn, args, kwargs)
        if inspect.isawaitable(value):  # an async callable object or a partial of one
            value = await value
        return value
    except (Exception, asyncio.CancelledError):
        raise
    except BaseException as err:  # noqa: BLE001 - SystemExit and the like from the tool itself
        raise Escaped(err) from err


async def _with_deadline(call: Any, seconds: float | None, name: str) -> Any:
    """Await `call`, cancelling it after `seconds`: a tool never goes on after the workflow
    is told it timed out."""
    if seconds is None:
        return await call
    task = asyncio.ensure_future(call)
    try:
        done, _ = await asyncio.wait({task}, timeout=seconds)
    except asyncio.CancelledError:  # the activity itself was cancelled or timed out
        task.cancel()
        raise
    if not done:
        task.cancel()
        raise ApplicationError(f"{name} did not finish within {seconds:g}s", type=TOOL_TIMEOUT)
    return task.result()


def _positional(params: Mapping[str, inspect.Parameter], kwargs: dict[str, Any]) -> list[Any]:
    """Take positional-only parameters out of `kwargs`, in order, to pass them by position."""
    return [kwargs.pop(p.name) for p in params.values() if p.kind is p.POSITIONAL_ONLY and p.name in kwargs]


def _failure(err: BaseException) -> ToolResult:
    text = str(err)
    return ToolResult(is_error=True, content=f"Error: {type(err).__name__}" + (f": {text}" if text else ""))


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
        params = t.parameters
        if "context_variables" in params:
            kwargs["context_variables"] = copy.deepcopy(req.context)
        if "idempotency_key" in params:
            kwargs["idempotency_key"] = req.idempotency_key
        args = _positional(params, kwargs)
        token = _idempotency_key.set(req.idempotency_key)
        try:
            result = to_result(await _with_deadline(_call(t.fn, args, kwargs), req.timeout_seconds, req.tool))
        except RetryableToolError as err:
            raise ApplicationError(f"{req.tool}: {err}", type="RetryableToolError") from err
        except ApplicationError as err:
            if err.type == TOOL_TIMEOUT:  # our own deadline: the workflow's retry policy decides
                raise
            result = _failure(err)
        except ResultError as err:
            result = unsendable(req.tool, err)
        except Escaped as err:
            activity.logger.warning("tool %s raised %r", req.tool, err.original)
            result = _failure(err.original)
        except Exception as err:  # the model should see what went wrong, once
            activity.logger.warning("tool %s failed", req.tool, exc_info=True)
            result = _failure(err)
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
