"""The tool activities: run a team's tools (durable_teams/teams/tools.py) on the worker.

A tool's failure that the model should see (bad arguments, an exception in the function, a
value that cannot be sent) comes back as data, an error `ToolResult`, recorded once and never
retried. Only `RetryableToolError` (an infrastructure failure the tool's author wants retried)
raises, and Temporal retries it only for a tool declared `idempotent=True`: every other tool
runs at most once per call.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_teams.activities.resolve_team import NoteOnUnknown, no_note
from durable_teams.memory import tool_cache
from durable_teams.memory.store import Store, StoreError
from durable_teams.memory.store_config import LazyStore
from durable_teams.teams.stream_writer import STREAM_WRITES, StreamWrites
from durable_teams.teams.team_tools import ToolsByTeam
from durable_teams.teams.tool_schema import (
    ToolArgumentsError,
    canonical_arguments,
    store_params,
    validate_arguments,
)
from durable_teams.teams.tools import IDEMPOTENCY_KEY, RetryableToolError, Tool, ToolRegistry
from durable_teams.workflows.messages import ToolRequest, ToolResult
from durable_teams.workflows.tool_calls import TOOL_TIMEOUT

from .heartbeats import heartbeating
from .tool_results import ResultError, to_result, unsendable
from .tool_threads import Escaped, in_thread

__all__ = ["MAX_RESULT_BYTES", "ToolActivities"]

MAX_RESULT_BYTES = 512 * 1024
"""Tool output above this is truncated with a note the model sees (Temporal rejects payloads
over 2 MB, and a rejected activity result would be retried to no end)."""


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
    """The tool activities, bound to the worker's tools (each team's, `ToolsByTeam`, or one
    registry that answers every team) and memory store (`store`: default, the one
    DURABLE_TEAMS_MEMORY names, opened when a tool first needs it)."""

    def __init__(self, registry: ToolRegistry | ToolsByTeam, note_on_unknown: NoteOnUnknown = no_note,
                 store: Store | LazyStore | None = None):
        self.tools = registry if isinstance(registry, ToolsByTeam) else ToolsByTeam.single(registry)
        self.note_on_unknown = note_on_unknown
        self.store = store if isinstance(store, LazyStore) else LazyStore(store)

    async def _store(self) -> Store | None:
        """The worker's store, or None (logged) when DURABLE_TEAMS_MEMORY cannot be used."""
        try:
            return await self.store.get()
        except StoreError as err:
            activity.logger.warning("the memory store cannot be opened: %s", err)
            return None

    async def _run(self, req: ToolRequest) -> ToolResult:
        t = self.tools.find(req.team, req.tool)
        if isinstance(t, str):  # the team has it (the workflow checked): a worker that lacks it
            note = await self.note_on_unknown()
            activity.logger.warning("tool %s (team %s) is not on this worker.%s", req.tool, req.team, note)
            return ToolResult(is_error=True, content=f"Error: {t}{note}")
        try:
            kwargs = validate_arguments(t.fn, req.arguments, tool_name=req.tool)
        except ToolArgumentsError as err:
            return ToolResult(is_error=True, content=f"Error: {err}")
        if not t.cache_seconds:
            return _bounded(await self._invoke(t, req, kwargs))
        # a cached tool: the same call within cache_seconds reuses the result kept in the store
        store = await self._store()
        call = tool_cache.CallIdentity(req.team, tool_cache.function_identity(t.fn), req.tenant,
                                       canonical_arguments(t.fn, kwargs))
        hit = None if store is None else await tool_cache.lookup(store, req.tool, call, t.cache_seconds)
        if hit is not None:
            return _bounded(ToolResult(content=tool_cache.marked(hit)))
        result = await self._invoke(t, req, kwargs)
        if store is not None and not (result.is_error or result.context_updates or result.handoff_to):
            await tool_cache.keep(store, req.tool, call, result.content)
        return _bounded(result)

    async def _invoke(self, t: Tool, req: ToolRequest, kwargs: dict[str, Any]) -> ToolResult:
        """Call the tool's function with what it declares filled in; its outcome as data, with
        what it wrote to its stream writer (teams/stream_writer.py), if anything."""
        writes = StreamWrites(req.tool)
        token = STREAM_WRITES.set(writes)
        try:
            result = await self._outcome(t, req, kwargs)
        finally:
            STREAM_WRITES.reset(token)
        return result.model_copy(update={"custom": writes.items}) if writes.items else result

    async def _outcome(self, t: Tool, req: ToolRequest, kwargs: dict[str, Any]) -> ToolResult:
        params = t.parameters
        for name in store_params(t.fn):
            store = await self._store()
            if store is None:
                return ToolResult(is_error=True, content=(
                    f"Error: {req.tool} needs the memory store, which this worker cannot open "
                    "(its DURABLE_TEAMS_MEMORY setting is refused; the worker's log says why)."))
            kwargs[name] = store
        if "context_variables" in params:
            kwargs["context_variables"] = copy.deepcopy(req.context)
        if "idempotency_key" in params:
            kwargs["idempotency_key"] = req.idempotency_key
        args = _positional(params, kwargs)
        token = IDEMPOTENCY_KEY.set(req.idempotency_key)
        try:
            return to_result(await _with_deadline(_call(t.fn, args, kwargs), req.timeout_seconds, req.tool))
        except RetryableToolError as err:
            raise ApplicationError(f"{req.tool}: {err}", type="RetryableToolError") from err
        except ApplicationError as err:
            if err.type == TOOL_TIMEOUT:  # our own deadline: the workflow's retry policy decides
                raise
            return _failure(err)
        except ResultError as err:
            return unsendable(req.tool, err)
        except Escaped as err:
            activity.logger.warning("tool %s raised %r", req.tool, err.original)
            return _failure(err.original)
        except Exception as err:  # the model should see what went wrong, once
            activity.logger.warning("tool %s failed", req.tool, exc_info=True)
            return _failure(err)
        finally:
            IDEMPOTENCY_KEY.reset(token)

    @activity.defn(name="run_tool")
    async def run_tool(self, req: ToolRequest) -> ToolResult:
        """Run one tool call (a regular activity: own retries, timeout, task queue),
        heartbeating, so a cancelled turn (workflows/cancelling.py) cancels the tool too."""
        return await heartbeating(self._run(req))

    @activity.defn(name="run_local_tool")
    async def run_local_tool(self, req: ToolRequest) -> ToolResult:
        """Run one tool call marked `local=True`, as a local activity (no extra round trip)."""
        return await self._run(req)
