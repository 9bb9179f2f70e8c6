"""A tenant's thread ids are its own: a scoped caller's thread `X` is the workflow
`<scope>:X` (a scope's name holds no ':'), so two tenants may each have a thread `X`, and one
learns nothing of the other's ids (creating an id another tenant uses makes its own). An
operator (no scope) names threads by their workflow ids. Every door that takes a thread id a
client chooses maps it here: the LangGraph door's threads, the native door's `thread_id`,
A2A's `contextId` (docs/architecture.md, "What is a tenant's own")."""

from __future__ import annotations

from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import ConversationNotFound
from durable_teams.gateway.core.threads import Gateway

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


async def found(gateway: Gateway, scope: str | None, thread: str) -> str:
    """The workflow a caller of `scope` means by `thread`, an id it was given or chose: its
    own `<scope>:thread` when there is one, else the workflow `thread` itself (an id the gateway
    derived, or a thread its tenant made under a raw id before ids were per tenant), which the
    caller's reads still check as every read does: another tenant's is "not found"."""
    if scope is None:
        return thread
    try:
        await gateway.visible(workflow_id(scope, thread), scope)
    except ConversationNotFound:
        return thread
    except RPCError as err:  # an id Temporal refuses is no thread either
        if err.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        return thread
    return workflow_id(scope, thread)
