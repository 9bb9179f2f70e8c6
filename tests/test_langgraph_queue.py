"""Where a LangGraph run's turn message is when a queued run before it was cancelled before it
began (it wrote none): counted past by the runs behind it, and by `working_turn` and
`turn_start`, with a stand-in thread answering the `turn_replies` query."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from durable_teams.gateway.doors.langgraph.langgraph_queue import turn_start, working_turn
from durable_teams.gateway.doors.langgraph.langgraph_stream import RunStream
from durable_teams.gateway.doors.langgraph.langgraph_wire import RunRef
from durable_teams.workflows.conversation_reads import ConversationStatus
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply
from durable_teams.workflows.usage import Tally

pytestmark = pytest.mark.pure

CANCELLED_IN_QUEUE = TurnReply(turn=2, text="Cancelled", agent="team", status="cancelled")
CANCELLED_RUNNING = TurnReply(turn=2, text="Cancelled", agent="echo", status="cancelled", usage=Tally())


class StandInThread:
    """The `turn_replies` query of a thread whose replies are `replies`; counts the queries."""

    def __init__(self, *replies: TurnReply) -> None:
        self.replies, self.queries = list(replies), 0

    def get_workflow_handle(self, thread: str) -> StandInThread:
        return self

    async def query(self, query: Any, numbers: list[int]) -> list[TurnReply]:
        self.queries += 1
        return [r for r in self.replies if r.turn in numbers]


def conversation(*texts: str) -> list[Message]:
    return [Message(role="assistant" if text.startswith("heard") else "user", content=text) for text in texts]


def third_run(thread: StandInThread, messages: list[Message]) -> RunStream:
    """Run t3, sent while t1 ran and t2 was queued: its message is the second after t1's."""
    gw: Any = SimpleNamespace(client=thread)
    return RunStream(gw, "th", RunRef(3), "echo", 2, skip=1, messages=messages)


async def test_a_run_behind_a_turn_cancelled_in_the_queue_finds_its_message() -> None:
    thread = StandInThread(CANCELLED_IN_QUEUE)
    run = third_run(thread, conversation("first", "heard: first", "third"))
    assert (await run.locate(), thread.queries) == (2, 1)


async def test_a_run_behind_a_turn_that_began_counts_it() -> None:
    thread = StandInThread()  # t2 runs: no reply yet
    run = third_run(thread, conversation("first", "heard: first", "second"))
    assert await run.locate() is None
    run.messages += conversation("heard: second")
    assert await run.locate() is None
    assert thread.queries == 1  # no turn message more: not read again
    thread.replies.append(TurnReply(turn=2, text="heard: second", agent="echo", usage=Tally()))
    run.messages += conversation("third")
    assert (await run.locate(), thread.queries) == (4, 2)


async def test_a_turn_cancelled_while_it_ran_wrote_its_message() -> None:
    run = third_run(StandInThread(CANCELLED_RUNNING), conversation("first", "heard: first", "second", "third"))
    assert await run.locate() == 3


def status(turns: int, queued: int, last: TurnReply | None) -> ConversationStatus:
    return ConversationStatus(active_agent=None, turns=turns, model_calls=0, pending=[], queued_turns=queued,
                              last_reply=last, closed=False)


async def test_the_working_turn_is_read_only_when_a_queued_turn_was_cancelled() -> None:
    thread = StandInThread(CANCELLED_IN_QUEUE)
    gw: Any = SimpleNamespace(client=thread)
    assert await working_turn(gw, "th", status(3, 2, CANCELLED_IN_QUEUE)) == 1  # t1 runs, t3 waits
    assert thread.queries == 1
    assert await working_turn(gw, "th", status(3, 2, TurnReply(turn=1, text="hi", agent="echo"))) == 2
    assert thread.queries == 1  # turns answered in order: the counts tell


async def test_a_turn_start_counts_back_over_the_turns_that_began() -> None:
    third_cancelled = TurnReply(turn=3, text="Cancelled", agent="team", status="cancelled")
    gw: Any = SimpleNamespace(client=StandInThread(third_cancelled))
    messages = conversation("zero", "heard: zero", "second", "heard: second", "fourth", "heard: fourth")
    assert await turn_start(gw, "th", messages, 2, 4) == 2  # t3 left no message between
    assert await turn_start(gw, "th", messages, 4, 4) == 4
