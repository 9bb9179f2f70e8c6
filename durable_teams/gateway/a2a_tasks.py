"""A2A tasks as turns of a thread: the task id names the thread and the turn, `contextId` is
the thread, and a task's state is read from the conversation's status each time (nothing
kept in the gateway, so a task outlives any restart). Pure: no Temporal, no HTTP."""

from __future__ import annotations

from dataclasses import dataclass

from durable_teams.gateway.threads import answering, question_text
from durable_teams.workflows.state import ConversationStatus, TurnReply

SEPARATOR = "::"


class NotATask(ValueError):
    """A task id this server did not give."""


def task_id(thread: str, turn: int) -> str:
    return f"{thread}{SEPARATOR}{turn}"


def parse_task_id(value: str) -> tuple[str, int]:
    """(thread, turn) of a task id; `NotATask` for anything else."""
    thread, sep, turn = value.rpartition(SEPARATOR)
    if not sep or not thread or not turn.isdigit() or int(turn) < 1 or len(value) > 300 or not value.isprintable():
        raise NotATask(f"no task {value[:80]!r}")
    return thread, int(turn)


@dataclass(frozen=True)
class TurnState:
    """A turn as an A2A task state (the names of A2A's `TaskState`, without the prefix) and the
    text that goes with it: the question asked, the reply, or why it failed."""

    state: str
    text: str = ""


FAILED_REPLIES = {"failed"}


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


def answered_by(status: ConversationStatus, turn: int) -> bool:
    """Whether turn `turn` waits for a person (a message on its task answers it)."""
    return bool(status.pending) and answering(status) == turn
