"""An answer always gets in: when the conversation has its ten updates in flight (waits for
turns' outcomes among them, durable_teams/client/turn_outcome.py), `send_reply` sends the
answer as the `human_reply` signal, which nothing limits, and learns from `answer_outcome`
whether it was taken."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.service import RPCError, RPCStatusCode

from durable_teams.client.refusals import QuestionClosed
from durable_teams.client.send import send_reply
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.state import AnswerOutcome, HumanReply

pytestmark = pytest.mark.pure


class FullOfUpdates:
    """A client whose conversation refuses every update (too many in flight) and takes signals."""

    def __init__(self, outcome: AnswerOutcome) -> None:
        self.outcome = outcome
        self.signals: list[tuple[str, HumanReply]] = []

    def get_workflow_handle(self, workflow_id: str) -> FullOfUpdates:
        return self

    async def execute_update(self, *args: object, **kwargs: object) -> None:
        raise RPCError("too many outstanding updates", RPCStatusCode.RESOURCE_EXHAUSTED, b"")

    async def signal(self, signal: Any, answer: HumanReply) -> None:
        self.signals.append((signal.__name__, answer))

    async def query(self, query: Any, input_id: str) -> AnswerOutcome:
        assert (query, input_id) == (TeamWorkflow.answer_outcome, self.signals[-1][1].input_id)
        return self.outcome


async def test_the_answer_goes_in_as_the_signal() -> None:
    client = FullOfUpdates(AnswerOutcome(taken=True))
    assert await send_reply(client, "t1", "q1", text="order 4711") == "q1"  # type: ignore[arg-type]
    assert [(name, a.question_id, a.text) for name, a in client.signals] == [("human_reply", "q1", "order 4711")]


async def test_a_signal_answer_the_workflow_refused_is_told_as_the_update_would() -> None:
    client = FullOfUpdates(AnswerOutcome(taken=False, reason="already answered", closed=True))
    with pytest.raises(QuestionClosed, match="already answered"):
        await send_reply(client, "t1", "q1", text="yes")  # type: ignore[arg-type]
