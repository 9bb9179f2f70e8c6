"""Conversations on a namespace with workflow updates turned off (older self-hosted releases
had them off by default: `frontend.enableUpdateWorkflowExecution`). Turns go in as the durable
`post_message` signal and answers as `human_reply`; the `turn_number` and `answer_outcome`
queries, which the server answers only after the signal's workflow task, tell the sender what
the update would have: the turn's number, or whether the answer was taken and why not."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from temporalio.client import WorkflowHandle, WorkflowQueryFailedError
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import (
    ConversationEnded,
    Patience,
    QuestionClosed,
    ReplyRejected,
    TurnConflict,
    TurnRejected,
)
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.intake import MAX_QUEUED_TURNS
from durable_teams.workflows.state import HumanReply, UserTurn


def updates_disabled(err: Exception) -> bool:
    """Whether the server refused an update because updates are off for the namespace (older
    self-hosted releases had them off by default: `frontend.enableUpdateWorkflowExecution`)."""
    return (isinstance(err, RPCError) and err.status in (RPCStatusCode.PERMISSION_DENIED, RPCStatusCode.UNIMPLEMENTED)
            and "disabled" in (err.message or "").lower())


async def submit_by_signal(handle: WorkflowHandle, turn: UserTurn, patience: Patience) -> int:
    """`submit_turn` where updates are off: the durable `post_message` signal (the same turn id
    makes a re-send the same turn), then the `turn_number` query, which the server answers only
    after the signal's workflow task: the number, or None when the workflow refused the turn.
    Checked first, as the update's validator would: the conversation's workers answer that query
    (else nothing is sent: a turn queued where its number cannot be learned would run while
    its sender is told it failed), it is open, and its queue has room (else `ConversationBusy`
    after `patience`)."""
    while True:
        status = await _query_patiently(handle, TeamWorkflow.status, None, patience)
        if status.closed:
            raise ConversationEnded(f"conversation {handle.id} is closed: it takes no more turns")
        known = await _query_patiently(handle, TeamWorkflow.turn_number, turn.turn_id, patience,
                                       missing="its workers predate turns sent as signals, and this "
                                               "namespace has workflow updates turned off: upgrade them")
        if known is not None:  # a re-send of a turn already taken
            return known
        if status.queued_turns < MAX_QUEUED_TURNS:
            break
        await patience.wait(f"{MAX_QUEUED_TURNS} turns are waiting to be answered")
    await handle.signal(TeamWorkflow.post_message, turn)
    number = await _query_patiently(handle, TeamWorkflow.turn_number, turn.turn_id, patience)
    if number is None:
        status = await handle.query(TeamWorkflow.status)
        refused = [r.reason for r in status.refused_signals if r.signal == "post_message"]
        reason = refused[-1] if refused else "the conversation did not take the turn"
        if "closed" in reason:
            raise ConversationEnded(f"conversation {handle.id} is closed: {reason}")
        raise (TurnConflict if "another turn came first" in reason else TurnRejected)(reason)
    return number


async def _query_patiently(handle: WorkflowHandle, query: Callable[..., Any], arg: object,
                           patience: Patience, missing: str | None = None) -> Any:
    """A query, asked again while the server is too busy (until `patience` runs out). With
    `missing`, a worker without that query is `TurnRejected(missing)`."""
    try:
        return await patience.retry(lambda: handle.query(query, args=[] if arg is None else [arg]))
    except WorkflowQueryFailedError as err:
        if missing is not None and "not found" in str(err).lower():
            raise TurnRejected(f"conversation {handle.id}: {missing}") from None
        raise


async def answer_by_signal(handle: WorkflowHandle, answer: HumanReply) -> None:
    """`send_reply` where updates are off: the durable `human_reply` signal under an input id,
    then the `answer_outcome` query (answered after the signal's workflow task) says whether it
    was taken: if not, `QuestionClosed` or `ReplyRejected` with the workflow's reason, as the
    update would."""
    input_id = answer.input_id or f"answer-{uuid.uuid4().hex}"
    await handle.signal(TeamWorkflow.human_reply, answer.model_copy(update={"input_id": input_id}))
    outcome = await handle.query(TeamWorkflow.answer_outcome, input_id)
    if outcome is not None and not outcome.taken:
        rejected = QuestionClosed if outcome.closed else ReplyRejected
        raise rejected(f"Rejected: {outcome.reason}")
