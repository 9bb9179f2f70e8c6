"""Talking to a conversation from a program: send a turn and get the team's reply.

A conversation continues as new when its history grows long. A `send_message` update still
waiting at that moment ends with the run (Temporal reports `AcceptedUpdateCompletedWorkflow`),
so `send_turn` gives every turn an id and, if the conversation is still running, sends the
same turn to the new run: the workflow recognises the id and returns that turn's reply, never
running it twice.

Temporal admits at most 10 updates in flight per workflow and refuses more with
RESOURCE_EXHAUSTED; `send_turn` waits and sends again, so many clients sending at once all get
their replies (the turns queue in the workflow and are answered one at a time).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import (
    BUSY,
    CLOSED,
    CONFLICT,
    CUT_BY_RUN_END,
    ConversationEnded,
    ConversationNotFound,
    Patience,
    QuestionClosed,
    ReplyRejected,
    TurnConflict,
    transient_reason,
)
from durable_teams.client.reply_watch import ConversationStopped, wait_for_reply
from durable_teams.client.updates_off import answer_by_signal, submit_by_signal, updates_disabled
from durable_teams.workflows.human import QUESTION_CLOSED
from durable_teams.workflows.state import (
    HumanReply,
    Question,
    TurnReply,
    UserTurn,
)


async def send_turn(
    client: Client,
    workflow_id: str,
    text: str,
    *,
    sender: str | None = None,
    turn_id: str | None = None,
    max_resends: int = 20,
    busy_timeout: float = 600.0,
) -> TurnReply:
    """Send `text` as a user turn and wait for the reply, across continue-as-new.

    Raises `ConversationEnded` (or its `ConversationNotFound`) when the conversation cannot
    answer, `ConversationBusy` after `busy_timeout` seconds of refusals (100 turns already
    queued, an unavailable server), and `WorkflowUpdateFailedError` when the workflow rejects
    the turn itself (an empty or oversized message: `err.cause.message` says why)."""
    try:
        accepted = await submit_turn(client, workflow_id, text, sender=sender, turn_id=turn_id,
                                     busy_timeout=busy_timeout)
    except WorkflowUpdateFailedError as err:
        if not _unknown_update(err):
            raise
        # a worker of an earlier release: the update that waits for the reply
        return await _send_waiting(client, workflow_id, UserTurn(
            text=text, sender=sender, turn_id=turn_id or uuid.uuid4().hex), max_resends, busy_timeout)
    return await accepted.reply()


def _unknown_update(err: WorkflowUpdateFailedError) -> bool:
    message = str(getattr(err.cause, "message", err.cause))
    return "submit_turn" in message and "not found" in message.lower()


async def _send_waiting(client: Client, workflow_id: str, turn: UserTurn, max_resends: int,
                        busy_timeout: float) -> TurnReply:
    """`send_message`, the update that waits for the reply, re-sent to the next run when a
    continue-as-new cuts it off."""
    for _ in range(max_resends + 1):
        handle = client.get_workflow_handle(workflow_id)  # no run id: the current run
        try:
            return await _send_when_admitted(handle, turn, busy_timeout)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == CLOSED:
                raise ConversationEnded(f"conversation {workflow_id} is closed: {cause.message}") from err
            if not (isinstance(cause, ApplicationError) and cause.type == CUT_BY_RUN_END):
                raise
            await _raise_unless_running(handle, err)
        except RPCError as err:
            if err.status != RPCStatusCode.NOT_FOUND:
                raise
            await _raise_unless_running(handle, err)
    raise ConversationEnded(f"turn not answered after {max_resends} re-sends to {workflow_id}")


@dataclass
class AcceptedTurn:
    """A turn the conversation has accepted: it is in the workflow's queue, numbered `number`,
    whatever becomes of the process that sent it. `reply()` waits for the team's answer."""

    client: Client
    workflow_id: str
    turn: UserTurn
    number: int

    async def reply(self) -> TurnReply:
        """The reply, once answered (durable_teams/client/reply_watch.py: one long poll of the history
        and one query per step for every waiter of this process), across continue-as-new.
        Raises `ConversationEnded` when the conversation stops before answering."""
        try:
            return await wait_for_reply(self.client, self.workflow_id, self.number)
        except ConversationStopped as stopped:
            handle = self.client.get_workflow_handle(self.workflow_id)
            await _raise_unless_running(handle, stopped)
            raise ConversationEnded(str(stopped)) from stopped


async def submit_turn(
    client: Client,
    workflow_id: str,
    text: str,
    *,
    sender: str | None = None,
    turn_id: str | None = None,
    busy_timeout: float = 600.0,
    max_tokens: int | None = None,
    patience: Patience | None = None,
    after_turns: int | None = None,
) -> AcceptedTurn:
    """Send `text` as a user turn and return as soon as the conversation has accepted it, with
    its number (an HTTP gateway answers its client only then, so an acknowledged turn is never
    lost). The same `turn_id` sent again is the same turn: the workflow answers it once.

    Raises `ConversationEnded` / `ConversationNotFound`, `ConversationBusy` after
    `busy_timeout` seconds of refusals (a full queue, an unavailable server; or when `patience`,
    a budget the caller already spent on checks before the turn, runs out), and
    `WorkflowUpdateFailedError` when the workflow refuses the turn (`err.cause.message`).
    `max_tokens` caps each model call of the turn. With `after_turns=N` the turn is taken only
    while the conversation has started exactly N turns (else `TurnConflict`)."""
    turn = UserTurn(text=text, sender=sender, turn_id=turn_id or uuid.uuid4().hex, max_tokens=max_tokens,
                    after_turns=after_turns)
    handle = client.get_workflow_handle(workflow_id)
    patience = patience or Patience(workflow_id, busy_timeout)
    while True:
        try:
            number = await handle.execute_update("submit_turn", turn, result_type=int)
            return AcceptedTurn(client, workflow_id, turn, number)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == CLOSED:
                raise ConversationEnded(f"conversation {workflow_id} is closed: {cause.message}") from err
            if isinstance(cause, ApplicationError) and cause.type == CONFLICT:
                raise TurnConflict(cause.message) from err
            reason = transient_reason(err) or (
                cause.message if isinstance(cause, ApplicationError) and cause.type == BUSY else None)
            if reason is None:
                raise
        except (RPCError, WorkflowUpdateRPCTimeoutOrCancelledError) as err:
            if isinstance(err, RPCError) and err.status == RPCStatusCode.NOT_FOUND:
                await _raise_unless_running(handle, err)
            if updates_disabled(err):
                return AcceptedTurn(client, workflow_id, turn, await submit_by_signal(handle, turn, patience))
            reason = transient_reason(err)
            if reason is None:
                raise
        await patience.wait(reason)


async def _send_when_admitted(handle: WorkflowHandle, turn: UserTurn, busy_timeout: float) -> TurnReply:
    """The update, sent again with growing, jittered pauses while the server refuses it for
    too many updates in flight, aborts it, or times out under load. Sending again is safe:
    the turn's id makes the workflow answer a turn it already has, not run it twice."""
    patience = Patience(handle.id, busy_timeout)
    while True:
        try:
            return await handle.execute_update("send_message", turn, result_type=TurnReply)
        except (RPCError, WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateFailedError) as err:
            reason = transient_reason(err)
            if reason is None:
                raise
            await patience.wait(reason)


async def _raise_unless_running(handle: WorkflowHandle, err: Exception | None) -> None:
    """Raise the typed reason the conversation cannot answer; return if it is still running
    (a continue-as-new cut the update off: the caller re-sends)."""
    try:
        described = await handle.describe()
    except RPCError as missing:
        if missing.status == RPCStatusCode.NOT_FOUND:
            raise ConversationNotFound(f"no conversation with id {handle.id}") from err
        raise
    if described.status != WorkflowExecutionStatus.RUNNING:
        state = described.status.name if described.status else "?"
        raise ConversationEnded(
            f"conversation {handle.id} ended ({state}) before answering this turn") from err


async def send_reply(client: Client, workflow_id: str, question_id: str | None, **reply: object) -> str:
    """Answer through the update, so the caller learns at once whether it was accepted."""
    handle = client.get_workflow_handle(workflow_id)
    if question_id is None:
        pending = await handle.query("pending_questions", result_type=list[Question])
        if len(pending) != 1:
            ids = ", ".join(q.question_id for q in pending) or "none"
            raise ReplyRejected(f"{len(pending)} questions pending ({ids}); name one with --question")
        question_id = pending[0].question_id
    answer = HumanReply(question_id=question_id, **reply)  # type: ignore[arg-type]
    try:
        await handle.execute_update("answer", answer)
    except RPCError as err:
        if not updates_disabled(err):
            raise
        await answer_by_signal(handle, answer)
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        closed = isinstance(cause, ApplicationError) and QUESTION_CLOSED in cause.details
        rejected = QuestionClosed if closed else ReplyRejected
        raise rejected(f"Rejected: {getattr(cause, 'message', cause)}") from None
    return question_id


