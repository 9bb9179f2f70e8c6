"""When a LangGraph run's stream reads the shared conversation (langgraph_waiting.py,
`Announced`): at an announced message of its own (agent run 0) once its calls have their tool
messages, not at a worker's private steps, not at the turn's answer (read with its outcome);
and once, to watch the history again, when announcements stop coming."""

from __future__ import annotations

import asyncio

import pytest

from durable_teams.gateway.doors.langgraph.langgraph_waiting import Announced
from durable_teams.live.hub import Delta, Live, Logged
from durable_teams.workflows.messages import Message, ToolCall

pytestmark = pytest.mark.pure


def logged(index: int, message: Message) -> Logged:
    return Logged("th", "run-1", index, message.model_dump(mode="json"))


def handoff_call(agent_run: int = 0) -> Message:
    return Message(role="assistant", name="supervisor", agent_run=agent_run,
                   tool_calls=[ToolCall(id="c1", name="transfer_to_math", arguments="{}")])


async def test_a_read_at_each_step_that_adds_to_the_shared_conversation_and_only_then() -> None:
    news = Announced(asyncio.Queue(), asyncio.Event(), quiet_seconds=60)
    reads = []
    steps: list[Live] = [
        logged(0, Message(role="user", content="how many?")),
        logged(1, handoff_call()),  # its result is on its way: read with it
        logged(2, Message(role="tool", tool_call_id="c1", content="to math", kind="handoff")),
        logged(3, handoff_call(agent_run=1)),  # a worker's own steps: private until its run ends
        logged(4, Message(role="tool", tool_call_id="c1", content="42", agent_run=1)),
        Delta("th", "math", "math:1", 5, text="the answer"),
        logged(5, Message(role="assistant", name="supervisor", content="42")),  # the answer: with the outcome
    ]
    for step in steps:
        news.grown.clear()
        news.take(step)
        reads.append(news.grown.is_set())
    assert reads == [True, False, True, False, False, False, False]
    assert news.trusted


async def test_quiet_announcements_have_the_conversation_read_once_and_are_trusted_again_at_the_next() -> None:
    news = Announced(asyncio.Queue(), asyncio.Event(), quiet_seconds=0.01)
    listening = asyncio.ensure_future(news.listen())
    try:
        await news.queue.put(logged(3, handoff_call(agent_run=1)))
        await asyncio.wait_for(news.grown.wait(), 5)  # no news for quiet_seconds: read, watch the history
        assert news.heard and not news.trusted
        news.grown.clear()
        news.take(logged(4, Message(role="tool", tool_call_id="c1", content="42", agent_run=1)))
        assert news.trusted and not news.grown.is_set()
    finally:
        listening.cancel()
