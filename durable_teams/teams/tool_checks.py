"""Checks made when a function becomes a tool (`@tool`, `tool(fn)`, `Agent(tools=[fn])`): its
name, its signature and its options, so a tool that cannot run fails where it is defined.
Pure: no Temporal, no I/O.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from durable_teams.workflows.definition_checks import (
    TeamError,
    at_least,
    positive,
    raise_first,
    tool_name_problem,
)

from .tool_schema import function_schema

DEFAULT_IDEMPOTENT_ATTEMPTS = 3
"""Attempts of a tool declared `idempotent=True` when it names no `max_attempts`."""


def tool_name(fn: Callable[..., Any], name: str | None) -> str:
    """The tool's name: `name`, else the function's own; a lambda or a callable without a
    `__name__` (a partial, an instance) must be named explicitly."""
    if name is not None:
        raise_first([tool_name_problem(name)])
        return name
    own = getattr(fn, "__name__", None)
    if not isinstance(own, str) or own == "<lambda>":
        what = "a lambda" if own == "<lambda>" else f"{type(fn).__name__} object without a __name__"
        raise TeamError(f"a tool needs a name: {what} has none; use def, or tool(fn, name=...)")
    raise_first([tool_name_problem(own)])
    return own


def check_signature(fn: Callable[..., Any], name: str) -> None:
    """Parameters a JSON schema can describe: no `*args` / `**kwargs` (positional-only ones
    work; they are passed by position)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError) as err:
        raise TeamError(f"tool {name!r}: its signature cannot be read ({err})") from None
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise TeamError(f"tool {name!r}: parameter {star}{p.name} cannot be described to a "
                            "model; give every parameter a name (and a type)")


def attempts(name: str, idempotent: bool, max_attempts: int | None, needs_approval: bool) -> int:
    """How many times the tool may run for one call: once, unless declared `idempotent`."""
    if max_attempts is None:
        return DEFAULT_IDEMPOTENT_ATTEMPTS if idempotent else 1
    raise_first([at_least(f"tool {name!r}", "max_attempts", max_attempts, 1)])
    if max_attempts > 1 and not idempotent:
        why = "needs approval and " if needs_approval else ""
        raise TeamError(
            f"tool {name!r} {why}may not be retried (max_attempts={max_attempts}): a retry after a "
            "timeout could repeat its side effect. Pass idempotent=True if running it twice is "
            "harmless (a read, or a write deduplicated with its idempotency key)")
    return max_attempts


def check_numbers(name: str, timeout_seconds: float, retry_interval_seconds: float,
                  task_queue: str | None) -> None:
    owner = f"tool {name!r}"
    raise_first([
        positive(owner, "timeout_seconds", timeout_seconds),
        positive(owner, "retry_interval_seconds", retry_interval_seconds),
        None if task_queue is None or (isinstance(task_queue, str) and task_queue.strip())
        else f"{owner}: task_queue must be a non-empty string, got {task_queue!r}",
    ])


def check_cache(name: str, cache_seconds: float | None, idempotent: bool, reads_context: bool) -> None:
    """A cached result stands for running the tool again: only a tool declared idempotent may
    be cached, and only one whose result depends on its arguments alone (a cached result is
    shared across conversations, so one reading `context_variables` would leak it)."""
    if cache_seconds is None:
        return
    owner = f"tool {name!r}"
    raise_first([positive(owner, "cache_seconds", cache_seconds)])
    if not idempotent:
        raise TeamError(f"{owner} cannot be cached (cache_seconds={cache_seconds!r}): a cached result "
                        "skips running it, which is only right for a tool that is safe to run twice "
                        "or not at all. Pass idempotent=True if it is (a read, a lookup)")
    if reads_context:
        raise TeamError(f"{owner} cannot be cached: it reads context_variables, and a cached result "
                        "is shared by every conversation that calls it with the same arguments")


def described(fn: Callable[..., Any], name: str) -> tuple[str, dict[str, Any]]:
    """The tool's description (its docstring) and its parameters as a JSON schema; a `TeamError`
    where pydantic cannot build a schema for an annotation."""
    try:
        return function_schema(fn)
    except Exception as err:
        raise TeamError(f"tool {name!r}: its parameters cannot be described as a JSON "
                        f"schema ({type(err).__name__}: {err})") from None
