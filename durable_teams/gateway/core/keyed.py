"""An Idempotency-Key stands for one request: the input id a keyed request goes in under is
the key's and the request's content's, so the thread tells a retry (the same id: nothing is
sent again, the first outcome is read) from another request under the same key (409), however
late: the workflow's `inputs_taken` query lists every id it took with the key's prefix (the
turns it keeps, the latest answers), not just its latest input."""

from __future__ import annotations

import hashlib
from typing import NamedTuple

from starlette.exceptions import HTTPException
from starlette.requests import Request
from temporalio.client import Client, WorkflowQueryFailedError

from durable_teams.workflows.conversation import TeamWorkflow


class KeyReused(HTTPException):
    """409: the key was used with another request on this thread."""

    kind = "idempotency_key_reused"

    def __init__(self, thread: str | None = None) -> None:
        where = f" on thread {thread}" if thread else ""  # None: a route whose request names no thread
        super().__init__(409, f"this Idempotency-Key was used for another request{where} "
                              "(other content): use a new key")


class KeyedInput(NamedTuple):
    """The id a keyed request goes in under, and the turn of the thread that took it already
    (None: a new input)."""

    id: str
    turn: int | None


def caller_key(request: Request, key: str) -> str:
    """An Idempotency-Key as this caller's own (two callers' equal keys never meet)."""
    caller = getattr(request.state, "caller", "") or ""
    return hashlib.sha256(f"{caller}\0{key}".encode()).hexdigest()[:32]


def content_id(prefix: str, *content: str) -> str:
    """`prefix` (the key's part, which ends with no dot) and a digest of the request's content."""
    return f"{prefix}.{hashlib.sha256(chr(0).join(content).encode()).hexdigest()[:16]}"


async def keyed_input(client: Client, thread: str, prefix: str, *content: str) -> KeyedInput:
    """The input of a request under the key `prefix` stands for; `KeyReused` when the thread
    took another request under it. A worker without the query (an older release): every
    keyed request is taken as new, as before."""
    wanted = content_id(prefix, *content)
    try:
        taken = await client.get_workflow_handle(thread).query(TeamWorkflow.inputs_taken, f"{prefix}.")
    except WorkflowQueryFailedError:  # "unknown query type": a worker of an earlier release
        return KeyedInput(wanted, None)
    if not isinstance(taken, dict) or not taken:
        return KeyedInput(wanted, None)
    if wanted not in taken:
        raise KeyReused(thread)
    turn = taken[wanted]
    return KeyedInput(wanted, turn if isinstance(turn, int) else None)
