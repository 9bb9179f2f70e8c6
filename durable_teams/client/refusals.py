"""What can keep a turn or an answer from going in, as exceptions a caller can catch, and how
long to keep trying while the server is only busy (`Patience`, `transient_reason`)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

T = TypeVar("T")

CLOSED = "ConversationClosed"
CONFLICT = "TurnConflict"
BUSY = "ConversationBusy"
UNPROCESSED = "UnprocessedUpdate"
TRANSIENT = {RPCStatusCode.RESOURCE_EXHAUSTED, RPCStatusCode.UNAVAILABLE,
             RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED}
logger = logging.getLogger(__name__)


class ConversationEnded(Exception):
    """The conversation is no longer running (closed, failed, cancelled, terminated or timed
    out), or is closing and takes no new turns."""


class ConversationNotFound(ConversationEnded):
    """No conversation has this workflow id (never started, or removed after its retention)."""


class ConversationBusy(Exception):
    """The server kept refusing the turn (too many updates in flight, aborted, timed out) for
    `busy_timeout` seconds."""


class ReplyRejected(Exception):
    """An answer or approval was not accepted: no such question, already answered, or empty."""


class QuestionClosed(ReplyRejected):
    """The question was answered already, or is not (or no longer) asked."""


class EditRefused(ReplyRejected):
    """A breakpoint's edited arguments do not fit the tool's parameters (the message names the
    field); the question stays open for arguments that do."""


class TurnRejected(Exception):
    """The conversation refused a turn sent as a signal (where updates are off): the reason,
    as an update's refusal would give it (an empty or oversized message, a closed conversation)."""


class TurnConflict(Exception):
    """A turn sent with `after_turns` came too late: the conversation had taken another turn
    since the sender looked (the turn was not added)."""


class TurnAbandoned(Exception):
    """A turn the conversation took in a branch a rewind then abandoned (the turn came after
    the checkpoint rewound to): the conversation that goes on will not answer it."""


class Patience:
    """Growing, jittered pauses between sends while the server is too busy, until
    `busy_timeout` seconds have passed; then `ConversationBusy` with the last reason."""

    def __init__(self, workflow_id: str, busy_timeout: float) -> None:
        self.workflow_id, self.busy_timeout = workflow_id, busy_timeout
        self.deadline = asyncio.get_running_loop().time() + busy_timeout
        self.pause = 0.05

    async def wait(self, reason: str) -> None:
        if asyncio.get_running_loop().time() + self.pause > self.deadline:
            raise ConversationBusy(f"conversation {self.workflow_id} did not take the turn within "
                                   f"{self.busy_timeout:g} s: {reason}")
        logger.debug("conversation %s busy (%s); sending again in %.2f s", self.workflow_id, reason, self.pause)
        await asyncio.sleep(self.pause * random.uniform(0.5, 1.0))
        self.pause = min(self.pause * 2, 1.0)

    async def retry(self, call: Callable[[], Awaitable[T]]) -> T:
        """`call()`, made again while the server is only busy (`transient_reason`), until this
        patience runs out (`ConversationBusy`); any other error is raised at once."""
        while True:
            try:
                return await call()
            except RPCError as err:
                reason = transient_reason(err)
                if reason is None:
                    raise
                await self.wait(reason)


def transient_reason(err: Exception) -> str | None:
    """Why sending again may succeed: too many updates in flight (RESOURCE_EXHAUSTED), an
    update the server aborted (UNAVAILABLE) or rejected as not processed by a worker (a
    workflow task lost under load), an RPC that timed out. None for anything else, including
    the caller cancelling: the SDK wraps that in the same timeout error, whose cause may be a
    CANCELLED RPC error (taken for the server's, it had a cancelled `chat` turn re-sent and
    waited on after Ctrl-C)."""
    if _cancelling():
        return None
    if isinstance(err, WorkflowUpdateFailedError):
        cause = err.cause
        if isinstance(cause, ApplicationError) and cause.type == UNPROCESSED:
            return cause.message
        return None
    rpc = err.__cause__ if isinstance(err, WorkflowUpdateRPCTimeoutOrCancelledError) else err
    if isinstance(rpc, RPCError) and rpc.status in TRANSIENT:
        return rpc.message or rpc.status.name
    return None


def _cancelling() -> bool:
    """Whether the task running this is being cancelled."""
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running loop
        return False
    return task is not None and task.cancelling() > 0
