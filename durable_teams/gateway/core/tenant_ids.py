"""A tenant's thread ids are its own: a scoped caller's thread `X` is the workflow
`<scope>:X` (a scope's name holds no ':'), so two tenants may each have a thread `X`, and one
learns nothing of the other's ids (creating an id another tenant uses makes its own). An
operator (no scope) names threads by their workflow ids. Every door that takes a thread id a
client names maps it here: the LangGraph door's threads, the native door's `thread_id` and
paths, the chat's `X-Thread-Id`, A2A's `contextId` and task ids, MCP's `thread_id` and task
ids (docs/architecture.md, "What is a tenant's own").

One id per thread for a caller: a tenant's thread `X` is never also `<scope>:X` (that spelling
names the thread `<scope>:X` of its own, the workflow `<scope>:<scope>:X`), and every answer and
error text names the thread as the caller does (`shown`, `in_own_words`). Doors compose their
error texts with workflow ids, as the core does; the HTTP error handlers and stream error frames
rename them (A2A and MCP compose theirs with the caller's ids, and rename the core's).

A new thread the gateway names at random is `<scope>:<team>-<hex>` too (`Gateway.start_thread`),
and so is an A2A context named after its `messageId`; an id derived from a request otherwise (a
chat's history, a Responses thread, an Idempotency-Key) stays raw, so a request sent again
finds its thread: those, and threads made under a raw id before ids were per tenant, are found
after the caller's own id (`found`)."""

from __future__ import annotations

import re
from typing import Protocol

from temporalio.client import WorkflowExecutionDescription
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import ConversationNotFound
from durable_teams.gateway.core.turn_tasks import task_id

SEPARATOR = ":"


class Gateway(Protocol):
    """What the mapping asks of the gateway (core/threads.py's `Gateway`, which makes a new
    thread's id here: no import back)."""

    async def visible(self, thread: str, scope: str | None) -> WorkflowExecutionDescription: ...


def workflow_id(scope: str | None, thread: str) -> str:
    """The workflow of a caller of `scope`'s thread `thread`."""
    return thread if scope is None else f"{scope}{SEPARATOR}{thread}"


def shown(scope: str | None, workflow: str) -> str:
    """The thread id a caller of `scope` knows the workflow by."""
    return workflow if scope is None else workflow.removeprefix(f"{scope}{SEPARATOR}")


def owned(scope: str | None, workflow: str) -> bool:
    """Whether the workflow's id is one of the scope's thread ids."""
    return scope is None or workflow.startswith(f"{scope}{SEPARATOR}")


def in_own_words(scope: str | None, text: str) -> str:
    """`text` (an error's, say) with each workflow id of the scope in it named as its caller
    names it (`shown`): an id begins the text or follows a space, a quote, a bracket or a '/'."""
    if scope is None:
        return text
    return re.sub(rf"(?:^|(?<=[\s'\"(\[{{/]))({re.escape(scope + SEPARATOR)})(?=\S)", "", text)


async def found(gateway: Gateway, scope: str | None, thread: str) -> str:
    """The workflow a caller of `scope` means by `thread`, an id it was given or chose: its
    own `<scope>:thread` when there is one; else the workflow `thread` itself (an id the gateway
    made, or a thread its tenant made under a raw id before ids were per tenant), which the
    caller's reads still check as every read does: another tenant's is "not found". An id that
    begins `<scope>:` is never taken raw: that workflow is the caller's thread of the id after
    the prefix, and this spelling names none (its own `<scope>:<scope>:...`, new or not found).
    A door that makes a thread a caller names makes `workflow_id(scope, thread)`."""
    if scope is None:
        return thread
    own = workflow_id(scope, thread)
    try:
        await gateway.visible(own, scope)
    except ConversationNotFound:
        return own if owned(scope, thread) else thread
    except RPCError as err:  # an id Temporal refuses is no thread either
        if err.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        return own if owned(scope, thread) else thread
    return own


def shown_task(scope: str | None, workflow: str, turn: int) -> str:
    """A task's id (turn `turn` of the workflow: core/turn_tasks.py) as a caller of `scope`
    names it: by its own id for the thread."""
    return task_id(shown(scope, workflow), turn)


async def visible_thread(gateway: Gateway, scope: str | None, thread: str) -> tuple[str, WorkflowExecutionDescription]:
    """`found` and `Gateway.visible` in one: (the workflow a caller of `scope` means by
    `thread`, as described), or `ConversationNotFound` naming the workflow (its text by the
    caller's id: `in_own_words`). One describe for an operator's thread and a tenant's own
    `<scope>:X`; a gateway-made or older raw id costs one more (the own id, looked up first)."""
    own = workflow_id(scope, thread)
    try:
        return own, await gateway.visible(own, scope)
    except ConversationNotFound:
        if scope is None or owned(scope, thread):
            raise
    except RPCError as err:  # an id Temporal refuses is no thread either
        if err.status != RPCStatusCode.INVALID_ARGUMENT or scope is None or owned(scope, thread):
            raise
    return thread, await gateway.visible(thread, scope)
