"""A turn of a conversation as the outside sees it from the `status` query: which turn the
thread works on, the question it waits on in words, and its state in A2A's terms. Pure: read
by the gateway (durable_teams/gateway/core/turn_tasks.py) and by the A2A push activity
(durable_teams/activities/a2a_push_delivery.py), never by a workflow."""

from __future__ import annotations

from dataclasses import dataclass

from .state import ConversationStatus, Question, TurnReply


def answering(status: ConversationStatus) -> int:
    """The number of the turn the thread works on (the first queued; its questions are the
    pending ones), or the latest when none is queued."""
    return status.turns - status.queued_turns + 1 if status.queued_turns else status.turns


def question_text(q: Question) -> str:
    """A question as an assistant message: what the next user message answers."""
    if q.kind == "approval":
        if q.breakpoint:  # yes resumes the step, no stops it
            return f"[{q.agent}] At a {q.step}. Resume? Reply yes or no."
        return f"[{q.agent}] Approve {q.tool}({q.arguments})? Reply yes or no."
    hint = f" (options: {' | '.join(q.suggestions)})" if q.suggestions else ""
    return f"[{q.agent}] {q.text}{hint}"


@dataclass(frozen=True)
class TurnState:
    """A turn as an A2A task state (the names of A2A's `TaskState`, without the prefix) and the
    text that goes with it: the question asked, the reply, or why it failed."""

    state: str
    text: str = ""


FAILED_REPLIES = {"failed"}
FINAL = {"COMPLETED", "FAILED", "CANCELED", "REJECTED"}
ENDED = TurnState("FAILED", "the conversation has ended")


def turn_state(status: ConversationStatus, turn: int, reply: TurnReply | None, running: bool) -> TurnState:
    """Turn `turn`'s state: input-required while its question waits, completed (or failed)
    once it has a reply (`reply`: that turn's), working while it runs, submitted while queued
    behind another; failed when the conversation ended without answering it."""
    if reply is not None and reply.turn == turn:
        if reply.status == "cancelled":
            return TurnState("CANCELED", reply.text)
        return TurnState("FAILED" if reply.status in FAILED_REPLIES else "COMPLETED", reply.text)
    current = answering(status)
    if status.pending and current == turn:
        return TurnState("INPUT_REQUIRED", question_text(status.pending[0]))
    if not running:
        return TurnState("FAILED", "the conversation ended before answering this message")
    return TurnState("WORKING" if current >= turn else "SUBMITTED")


def ended_state(found: TurnState, running: bool, cancelled: bool) -> TurnState:
    """`found` once the thread's workflow has ended (`running` False): a turn it left open ended
    with it, cancelled when the workflow was cancelled or terminated."""
    if not running and found.state not in ("COMPLETED", "FAILED") or cancelled and found.state == "FAILED":
        return TurnState("CANCELED" if cancelled else "FAILED", ENDED.text)
    return found


def answered_by(status: ConversationStatus, turn: int) -> bool:
    """Whether turn `turn` waits for a person (a message on its task answers it)."""
    return bool(status.pending) and answering(status) == turn
