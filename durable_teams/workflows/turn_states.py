"""A turn of a conversation as the outside sees it from the `status` query: which turn the
thread works on, the question it waits on in words, and how far the turn has come, in the
team's words (`Progress`). Pure: read by the gateway's core and doors, each door saying it in
its protocol's words (A2A's task states: workflows/a2a_tasks.py), never by a workflow."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .conversation_reads import ConversationStatus
from .state import Question, TurnReply


def answering(status: ConversationStatus) -> int:
    """The number of the turn the thread works on (the first queued; its questions are the
    pending ones), or the latest when none is queued. A worker of an earlier release does not
    say (`working_turn`): counted then, which takes the queue for the turns numbered last (not
    so once a queued turn was cancelled)."""
    if status.working_turn is not None:
        return status.working_turn
    return status.turns - status.queued_turns + 1 if status.queued_turns else status.turns


def question_text(q: Question) -> str:
    """A question as an assistant message: what the next user message answers."""
    if q.kind == "approval":
        if q.breakpoint:  # yes resumes the step, no stops it
            return f"[{q.agent}] At a {q.step}. Resume? Reply yes or no."
        return f"[{q.agent}] Approve {q.tool}({q.arguments})? Reply yes or no."
    hint = f" (options: {' | '.join(q.suggestions)})" if q.suggestions else ""
    return f"[{q.agent}] {q.text}{hint}"


Progress = Literal["queued", "working", "waiting", "completed", "failed", "cancelled"]
"""How far a turn has come: queued behind another turn, working, waiting for a person (its
question), or ended: completed (a reply), failed, cancelled."""


@dataclass(frozen=True)
class TurnState:
    """A turn's progress and the text that goes with it: the question asked, the reply, or why
    it failed."""

    state: Progress
    text: str = ""


FAILED_REPLIES = {"failed"}
DONE: frozenset[Progress] = frozenset({"completed", "failed", "cancelled"})
"""The states a turn ends in (it changes no more)."""
ENDED = TurnState("failed", "the conversation has ended")


def turn_state(status: ConversationStatus, turn: int, reply: TurnReply | None, running: bool) -> TurnState:
    """Turn `turn`'s state: waiting while its question waits, completed (or failed, or
    cancelled) once it has a reply (`reply`: that turn's), working while it runs, queued behind
    another; failed when the conversation ended without answering it."""
    if reply is not None and reply.turn == turn:
        return replied_state(reply)
    current = answering(status)
    if status.pending and current == turn:
        return TurnState("waiting", question_text(status.pending[0]))
    if not running:
        return TurnState("failed", "the conversation ended before answering this message")
    return TurnState("working" if current >= turn else "queued")


def replied_state(reply: TurnReply) -> TurnState:
    """The state of the turn `reply` answers: completed, failed or cancelled, with its text."""
    if reply.status == "cancelled":
        return TurnState("cancelled", reply.text)
    return TurnState("failed" if reply.status in FAILED_REPLIES else "completed", reply.text)


def ended_state(found: TurnState, running: bool, cancelled: bool) -> TurnState:
    """`found` once the thread's workflow has ended (`running` False): a turn it left open ended
    with it, cancelled when the workflow was cancelled or terminated."""
    if not running and found.state not in ("completed", "failed") or cancelled and found.state == "failed":
        return TurnState("cancelled" if cancelled else "failed", ENDED.text)
    return found


def answered_by(status: ConversationStatus, turn: int) -> bool:
    """Whether turn `turn` waits for a person (a message on its task answers it)."""
    return bool(status.pending) and answering(status) == turn
