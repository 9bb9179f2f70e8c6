"""What an exchange with a thread ends with, and how a thread's state reads to a chat client:
the turn it works on, a question as the assistant's message. Pure: no Temporal calls."""

from __future__ import annotations

from typing import NamedTuple

from durable_teams.workflows.state import TurnReply
from durable_teams.workflows.turn_view import answering, question_text
from durable_teams.workflows.usage import Tally

__all__ = ["Outcome", "answering", "question_text"]
"""`answering` and `question_text` live in durable_teams/workflows/turn_view.py (the A2A push
activity reads a turn as the gateway does); named here, where the gateway finds them."""


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


async def _now(value: Outcome) -> Outcome:
    return value

