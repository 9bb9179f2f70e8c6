"""A tenant's thread ids are its own: a scoped caller's thread `X` is the workflow
`<scope>:X` (a scope's name holds no ':'), so two tenants may each have a thread `X`, and one
learns nothing of the other's ids (creating an id another tenant uses makes its own). An
operator (no scope) names threads by their workflow ids, as every door does. The mapping
itself is the core's (durable_teams/gateway/core/tenant_ids.py), shared with the native and
A2A doors; here, the thread a LangGraph request names. Pure: no Temporal calls."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from durable_teams.gateway.core import requests as checks
from durable_teams.gateway.core.scopes import scope_of
from durable_teams.gateway.core.tenant_ids import workflow_id


def thread_in(request: Request, source: dict[str, Any] | None = None, name: str = "thread") -> str:
    """The workflow of the thread the request names (in its path, or `source[name]`)."""
    given = request.path_params[name] if source is None else source[name]
    return workflow_id(scope_of(request), checks.thread_id(given, "thread id" if source is None else name))
