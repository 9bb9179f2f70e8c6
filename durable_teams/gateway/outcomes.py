"""What an exchange with a thread ends with, and how a thread's state reads to a chat client:
the turn it works on, a question as the assistant's message. Pure: no Temporal calls."""

from __future__ import annotations

from typing import NamedTuple

from durable_teams.workflows.state import ConversationStatus, Question, TurnReply
from durable_teams.workflows.usage import Tally


class Outcome(NamedTuple):
    """What an exchange ends with: a "reply", a "question", or "failed" (the text says why),
    with the turn's tokens when it ended (none for a question: the turn goes on)."""

    kind: str
    text: str
    usage: Tally | None = None
    finish_reason: str = "stop"
    """OpenAI's: "length" when a model call of the turn was cut at its token limit,
    "content_filter" when the endpoint's filter cut it."""

    @classmethod
    def of(cls, reply: TurnReply) -> Outcome:
        finish = {"truncated": "length", "filtered": "content_filter"}.get(reply.status, "stop")
        return cls("failed" if reply.status == "failed" else "reply", reply.text, reply.usage, finish)


def answering(status: ConversationStatus) -> int:
    """The number of the turn the thread works on (the first queued; its questions are the
    pending ones), or the latest when none is queued."""
    return status.turns - status.queued_turns + 1 if status.queued_turns else status.turns


async def _now(value: Outcome) -> Outcome:
    return value


def question_text(q: Question) -> str:
    """A question as an assistant message: what the next user message answers."""
    if q.kind == "approval":
        if q.breakpoint:  # yes resumes the step, no stops it
            return f"[{q.agent}] At a {q.step}. Resume? Reply yes or no."
        return f"[{q.agent}] Approve {q.tool}({q.arguments})? Reply yes or no."
    hint = f" (options: {' | '.join(q.suggestions)})" if q.suggestions else ""
    return f"[{q.agent}] {q.text}{hint}"
