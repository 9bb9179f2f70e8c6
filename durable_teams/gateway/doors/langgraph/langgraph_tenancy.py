"""A tenant's thread ids are its own: a scoped caller's thread `X` is the workflow
`<scope>:X` (a scope's name holds no ':'), so two tenants may each have a thread `X`, and one
learns nothing of the other's ids (creating an id another tenant uses makes its own). An
operator (no scope) names threads by their workflow ids, as every door does. Pure: no
Temporal calls."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.scopes import scope_of

SEPARATOR = ":"


def workflow_id(scope: str | None, thread: str) -> str:
    """The workflow of a caller of `scope`'s thread `thread`."""
    return thread if scope is None else f"{scope}{SEPARATOR}{thread}"


def shown(scope: str | None, workflow: str) -> str:
    """The thread id a caller of `scope` knows the workflow by."""
    return workflow if scope is None else workflow.removeprefix(f"{scope}{SEPARATOR}")


def owned(scope: str | None, workflow: str) -> bool:
    """Whether the workflow's id is one of the scope's thread ids."""
    return scope is None or workflow.startswith(f"{scope}{SEPARATOR}")


def thread_in(request: Request, source: dict[str, Any] | None = None, name: str = "thread") -> str:
    """The workflow of the thread the request names (in its path, or `source[name]`)."""
    given = request.path_params[name] if source is None else source[name]
    return workflow_id(scope_of(request), checks.thread_id(given, "thread id" if source is None else name))
