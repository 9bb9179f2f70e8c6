"""Talking to a conversation from a program: send a turn and get the team's reply.

A conversation continues as new when its history grows long. A `send_message` update still
waiting at that moment ends with the run (Temporal reports `AcceptedUpdateCompletedWorkflow`),
so `send_turn` gives every turn an id and, if the conversation is still running, sends the
same turn to the new run: the workflow recognises the id and returns that turn's reply, never
running it twice.
"""

from __future__ import annotations

import uuid

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError

from durable_teams.workflows.state import HumanReply, Question, TurnReply, UserTurn

CUT_BY_RUN_END = "AcceptedUpdateCompletedWorkflow"


class ConversationEnded(Exception):
    """The conversation is no longer running (closed, failed or terminated)."""


class ReplyRejected(Exception):
    """An answer or approval was not accepted: no such question, already answered, or empty."""


async def send_turn(
    client: Client,
    workflow_id: str,
    text: str,
    *,
    sender: str | None = None,
    turn_id: str | None = None,
    max_resends: int = 20,
) -> TurnReply:
    """Send `text` as a user turn and wait for the reply, across continue-as-new."""
    turn = UserTurn(text=text, sender=sender, turn_id=turn_id or uuid.uuid4().hex)
    for _ in range(max_resends + 1):
        handle = client.get_workflow_handle(workflow_id)  # no run id: the current run
        try:
            return await handle.execute_update("send_message", turn, result_type=TurnReply)
        except WorkflowUpdateFailedError as err:
            cause = err.cause
            if not (isinstance(cause, ApplicationError) and cause.type == CUT_BY_RUN_END):
                raise
            described = await handle.describe()
            if described.status != WorkflowExecutionStatus.RUNNING:
                raise ConversationEnded(
                    f"conversation {workflow_id} ended ({described.status.name if described.status else '?'}) "
                    "before answering this turn") from err
    raise ConversationEnded(f"turn not answered after {max_resends} re-sends to {workflow_id}")


async def send_reply(client: Client, workflow_id: str, question_id: str | None, **reply: object) -> str:
    """Answer through the update, so the caller learns at once whether it was accepted."""
    handle = client.get_workflow_handle(workflow_id)
    if question_id is None:
        pending = await handle.query("pending_questions", result_type=list[Question])
        if len(pending) != 1:
            ids = ", ".join(q.question_id for q in pending) or "none"
            raise ReplyRejected(f"{len(pending)} questions pending ({ids}); name one with --question")
        question_id = pending[0].question_id
    try:
        await handle.execute_update("answer", HumanReply(question_id=question_id, **reply))  # type: ignore[arg-type]
    except WorkflowUpdateFailedError as err:
        cause = err.cause
        raise ReplyRejected(f"Rejected: {getattr(cause, 'message', cause)}") from None
    return question_id
