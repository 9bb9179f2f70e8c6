"""What an exchange with a thread ends with, and what waits for it. Pure: no Temporal calls.
(How a thread's state reads to a client, the turn it works on and a question as the assistant's message:
durable_teams/workflows/turn_states.py.)"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import NamedTuple

from durable_teams.workflows.state import TurnReply
from durable_teams.workflows.usage import Tally

__all__ = ["Outcome", "Waiter"]


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


class Waiter:
    """What waits for an exchange's outcome (call it), and the turn the exchange concerns
    (None when not known)."""

    def __init__(self, wait: Callable[[], Awaitable[Outcome]], turn: int | None) -> None:
        self.wait, self.turn = wait, turn

    def __call__(self) -> Awaitable[Outcome]:
        return self.wait()


async def _now(value: Outcome) -> Outcome:
    return value

