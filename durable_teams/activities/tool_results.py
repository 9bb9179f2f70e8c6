"""A tool's return value as a `ToolResult` that can always travel: text the model reads, context
updates that fit, no string Temporal's JSON converter would refuse.

Whatever the tool returned, the outcome is one `ToolResult`. A value that cannot be sent is an
error result saying that the tool *ran* (its side effect happened) and was not retried: an
activity result that cannot be encoded would otherwise fail the attempt and be retried.
Pure: no Temporal, no I/O.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from durable_teams.workflows.messages import ToolResult
from durable_teams.workflows.tool_calls import sendable

MAX_CONTEXT_UPDATE_BYTES = 64 * 1024
"""A tool's `context_variables` update above this (as JSON) is not applied: context travels in
every later tool request and in the workflow's state, so it must stay small."""


@dataclass
class Result:
    """What a tool may return instead of a plain value (the Swarm cookbook's `Result`)."""

    value: str = ""
    agent: str | None = None
    """Hand the conversation to this agent (an object with a `name`, such as an `Agent`, is
    accepted too and stands for that name)."""
    context_variables: dict[str, Any] = field(default_factory=dict)
    """Updates to the conversation's context variables."""


class ResultError(ValueError):
    """The tool ran but what it returned cannot be sent; the message says why."""


def _content(value: Any) -> str:
    """A tool's return value as the text the model reads."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    if inspect.isgenerator(value) or inspect.isasyncgen(value):
        raise ResultError("returned a generator instead of a value (return a list instead)")
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if callable(close):  # no "never awaited" warning for a coroutine we refuse
            close()
        raise ResultError("returned an awaitable that was never awaited instead of a value")
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError) as err:
        raise ResultError(f"returned a value JSON cannot encode ({type(err).__name__}: {err})") from None


def _context_updates(updates: Any) -> dict[str, Any]:
    """The updates as plain JSON data (a round trip), bounded in size."""
    if not isinstance(updates, dict):
        raise ResultError(f"returned context_variables that are a {type(updates).__name__}, not a dict")
    try:
        text = sendable(json.dumps(updates, default=str, ensure_ascii=False))
    except (TypeError, ValueError) as err:
        raise ResultError(f"returned context_variables JSON cannot encode ({type(err).__name__}: {err})") from None
    size = len(text.encode())
    if size > MAX_CONTEXT_UPDATE_BYTES:
        raise ResultError(f"returned a context_variables update of {size:,} bytes, over the "
                          f"{MAX_CONTEXT_UPDATE_BYTES:,}-byte limit; the update was not applied")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def to_result(value: Any) -> ToolResult:
    """The `ToolResult` for a tool's return value; raises `ResultError` if it cannot be sent."""
    if not isinstance(value, Result):
        return ToolResult(content=sendable(_content(value)))
    agent = value.agent if value.agent is None else getattr(value.agent, "name", value.agent)
    return ToolResult(
        content=sendable(_content(value.value)),
        handoff_to=None if agent is None else sendable(str(agent)),
        context_updates=_context_updates(value.context_variables),
    )


def unsendable(tool: str, err: ResultError) -> ToolResult:
    """The error result for a tool that ran but returned something that cannot be sent."""
    return ToolResult(is_error=True, content=(
        f"Error: {tool} ran but {err}. Its side effects, if any, happened; it was not retried."))
