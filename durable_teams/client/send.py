"""Talking to a conversation from a program: send a turn and get the team's reply.

A turn is the `submit_turn` update: it returns the turn's number as soon as the workflow has
queued it, and the reply is read afterwards (durable_teams/client/reply_watch.py), across
continue-as-new. Every turn carries an id, so a turn sent again is the same turn: the workflow
answers it once.

Temporal admits at most 10 updates in flight per workflow and refuses more with
RESOURCE_EXHAUSTED; `submit_turn` waits and sends again, so many clients sending at once all get
their replies (the turns queue in the workflow and are answered one at a time).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateRPCTimeoutOrCancelledError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import (
    BUSY,
    CLOSED,
    CONFLICT,
    ConversationEnded,
    ConversationNotFound,
    EditRefused,
    Patience,
    QuestionClosed,
    ReplyRejected,
    TurnConflict,
    transient_reason,
)
from durable_teams.client.reply_watch import ConversationStopped, wait_for_reply
from durable_teams.client.server_state import why_it_failed
from durable_teams.client.turn_outcome import OutcomeUnavailable, wait_outcome
from durable_teams.client.updates_off import answer_by_signal, submit_by_signal, updates_disabled
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.human import EDIT_REFUSED, QUESTION_CLOSED
from durable_teams.workflows.intake import KEYED_UPDATE, MAX_ID_CHARS
from durable_teams.workflows.state import (
    AnswerAck,
    HumanReply,
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
    busy_timeout: float = 600.0,
) -> TurnReply:
    """Send `text` as a user turn and wait for the reply, across continue-as-new.

    Raises `ConversationEnded` (or its `ConversationNotFound`) when the conversation cannot
    answer, `ConversationBusy` after `busy_timeout` seconds of refusals (100 turns already
    queued, an unavailable server), and `WorkflowUpdateFailedError` when the workflow rejects
    the turn itself (an empty or oversized message: `err.cause.message` says why)."""
    accepted = await submit_turn(client, workflow_id, text, sender=sender, turn_id=turn_id,
                                 busy_timeout=busy_timeout)
    return await accepted.reply()


@dataclass
class AcceptedTurn:
    """A turn the conversation has accepted: it is in the workflow's queue, numbered `number`,
    whatever becomes of the process that sent it. `reply()` waits for the team's answer."""

    client: Client
    workflow_id: str
    turn: UserTurn
    number: int
    run_id: str | None = None
    """The run that took the turn, when known: a rewind that abandons it is told apart."""

    async def reply(self) -> TurnReply:
        """The reply, once answered: with one call that waits for it
        (durable_teams/client/turn_outcome.py), else by watching the conversation
        (durable_teams/client/reply_watch.py: one long poll of the history and one query per
        step for every waiter of this process), across continue-as-new.
        Raises `ConversationEnded` when the conversation stops before answering,
        `TurnAbandoned` when a rewind abandoned the branch that took the turn."""
        try:
            outcome = await wait_outcome(self.client, self.workflow_id, self.number, run_id=self.run_id)
        except OutcomeUnavailable:
            return await self.watched_reply()
        assert outcome.reply is not None  # waited for without questions: a reply, or unavailable
        return outcome.reply

    async def watched_reply(self) -> TurnReply:
        """The reply, read by watching the conversation's history (`reply`'s earlier way)."""
        try:
            return await wait_for_reply(self.client, self.workflow_id, self.number, self.turn.turn_id, self.run_id)
        except ConversationStopped as stopped:
            handle = self.client.get_workflow_handle(self.workflow_id)
            await _raise_unless_running(self.client, handle, stopped)
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
    interrupt_before: list[str] | None = None,
    interrupt_after: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    update_key: str | None = None,
) -> AcceptedTurn:
    """Send `text` as a user turn and return as soon as the conversation has accepted it, with
    its number (an HTTP gateway answers its client only then, so an acknowledged turn is never
    lost). The same `turn_id` sent again is the same turn: the workflow answers it once.

    Raises `ConversationEnded` / `ConversationNotFound`, `ConversationBusy` after
    `busy_timeout` seconds of refusals (a full queue, an unavailable server; or when `patience`,
    a budget the caller already spent on checks before the turn, runs out), and
    `WorkflowUpdateFailedError` when the workflow refuses the turn (`err.cause.message`).
    `max_tokens` caps each model call of the turn. With `after_turns=N` the turn is taken only
    while the conversation has started exactly N turns (else `TurnConflict`). `interrupt_before`
    and `interrupt_after` name agents (or "*") the turn pauses before or after, as breakpoints;
    `metadata` is kept with the turn (query `turn_metadata`). `update_key`: an idempotency key
    the update is named by instead of the turn's id (`keyed_update_id`): a twin answer taken
    under it instead is `TurnConflict`."""
    turn = UserTurn(text=text, sender=sender, turn_id=turn_id or uuid.uuid4().hex, max_tokens=max_tokens,
                    after_turns=after_turns, interrupt_before=interrupt_before, interrupt_after=interrupt_after,
                    metadata=metadata)
    return await _accepted(client, workflow_id, turn, update_key, patience or Patience(workflow_id, busy_timeout))


async def _accepted(client: Client, workflow_id: str, turn: UserTurn, update_key: str | None,
                    patience: Patience) -> AcceptedTurn:
    """`turn` sent as the `submit_turn` update until the conversation accepts it: a busy
    conversation or a transient failure waited out on `patience`, a run that ended meanwhile
    (a continue-as-new, a rewind's reset) left for the run that goes on, a namespace with
    updates off sent a signal instead; what the refusal means raised otherwise."""
    handle = client.get_workflow_handle(workflow_id)
    while True:
        try:
            # the turn's id (or key) is the update's: duplicates sent at once are one update to Temporal
            update = await handle.start_update(  # by name: the result type is the key's (`EITHER_INPUT`)
                "submit_turn", turn, wait_for_stage=WorkflowUpdateStage.COMPLETED,
                id=keyed_update_id(update_key) if update_key else update_id("turn", turn.turn_id),
                result_type=EITHER_INPUT if update_key else int)
            number = await update.result()
            if not isinstance(number, int):  # the key's update was an answer sent at once: not this turn
                raise TurnConflict(f"another input under this key was taken by {workflow_id} (an answer)")
            return AcceptedTurn(client, workflow_id, turn, number, update.workflow_run_id)
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
                await _raise_unless_running(client, handle, err)
                # still running: the run it reached ended meanwhile (a continue-as-new, or a
                # rewind's reset) without taking it; the run that goes on is sent it
                await patience.wait(f"the run it reached had just ended: {err.message}")
                continue
            if updates_disabled(err):
                return AcceptedTurn(client, workflow_id, turn, await submit_by_signal(handle, turn, patience))
            reason = transient_reason(err)
            if reason is None:
                raise
        await patience.wait(reason)


def update_id(kind: str, input_id: str | None) -> str | None:
    """The update an input goes in by is named after it and its kind (None: a new id), so
    Temporal takes duplicates sent at once as one update and a retry after it completed (in the
    same run) gets its result; an id the workflow refuses as too long is left to it to refuse,
    with its reason. An input under an idempotency key goes by `keyed_update_id` instead."""
    return f"{kind}:{input_id}" if input_id and len(input_id) <= MAX_ID_CHARS else None


def keyed_update_id(key: str) -> str:
    """The update every input under an idempotency key goes in by, a turn's or an answer's
    (`update_key`), so Temporal runs one of them however many are sent at once: the others get
    its result (`EITHER_INPUT`), and tell it apart from theirs (durable_teams/gateway/core/
    idempotency.py)."""
    return f"{KEYED_UPDATE}{key}"


EITHER_INPUT = cast(type, int | AnswerAck)
"""The result of a keyed input's update: a turn's number, or an answer's acknowledgement."""


async def _running(handle: WorkflowHandle) -> bool:
    """Whether the conversation still runs (in whichever run is current)."""
    try:
        return (await handle.describe()).status == WorkflowExecutionStatus.RUNNING
    except RPCError:
        return False


async def _raise_unless_running(client: Client, handle: WorkflowHandle, err: Exception | None) -> None:
    """Raise the typed reason the conversation cannot answer (with why it failed, when it
    did: an unknown team, say); return if it is still running."""
    try:
        described = await handle.describe()
    except RPCError as missing:
        if missing.status == RPCStatusCode.NOT_FOUND:
            raise ConversationNotFound(f"no conversation with id {handle.id}") from err
        raise
    if described.status != WorkflowExecutionStatus.RUNNING:
        state = described.status.name if described.status else "?"
        raise ConversationEnded(
            f"conversation {handle.id} ended ({state}) before answering this turn"
            f"{await why_it_failed(client, handle.id)}") from err


async def send_reply(client: Client, workflow_id: str, question_id: str | None, **reply: object) -> str:
    """Answer through the update, so the caller learns at once whether it was accepted."""
    return await send_answer(client, workflow_id, question_id, reply)


async def send_answer(client: Client, workflow_id: str, question_id: str | None, reply: Mapping[str, object],
                      update_key: str | None = None) -> str:
    """`send_reply`, the update named by the idempotency key `update_key` instead of the
    answer's `input_id` when given (`keyed_update_id`, as `submit_turn`'s)."""
    handle = client.get_workflow_handle(workflow_id)
    if question_id is None:
        pending = await handle.query(TeamWorkflow.pending_questions)
        if len(pending) != 1:
            ids = ", ".join(q.question_id for q in pending) or "none"
            raise ReplyRejected(f"{len(pending)} questions pending ({ids}); name one with --question")
        question_id = pending[0].question_id
    answer = HumanReply(question_id=question_id, **reply)  # type: ignore[arg-type]
    for attempt in range(3):
        try:
            result = await handle.execute_update(  # by name, as `submit_turn`'s
                "answer", answer, id=keyed_update_id(update_key) if update_key else update_id("answer", answer.input_id),
                result_type=EITHER_INPUT if update_key else AnswerAck)
            if isinstance(result, int):  # the key's update was a turn sent at once: not this answer
                raise TurnConflict(f"another input under this key was taken by {workflow_id} (a turn)")
        except RPCError as err:
            if err.status == RPCStatusCode.NOT_FOUND and attempt < 2 and await _running(handle):
                continue  # the run it reached had just ended (a rewind, a continue-as-new): the next one
            # Ten updates in flight (waits for turns' outcomes among them): the answer goes in as
            # the signal, which nothing limits, so a person can always answer.
            if not updates_disabled(err) and err.status != RPCStatusCode.RESOURCE_EXHAUSTED:
                raise
            await answer_by_signal(handle, answer)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == CONFLICT:  # its key took another input
                raise TurnConflict(cause.message) from None
            details = cause.details if isinstance(cause, ApplicationError) else ()
            rejected = QuestionClosed if QUESTION_CLOSED in details else (
                EditRefused if EDIT_REFUSED in details else ReplyRejected)
            raise rejected(f"Rejected: {getattr(cause, 'message', cause)}") from None
        break
    return question_id


