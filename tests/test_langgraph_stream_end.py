"""A LangGraph run's stream always ends: its last frame, then the end of the response, however
the run's outcome (the `turn_outcome` update) and the thread's steps (the history's long poll)
arrive, and when either fails. With stand-ins for the thread, in the orders that once left
streams open under load (test_langgraph_probe's hundred runs): the outcome arriving while the
stream read the conversation, or with the long poll's first look, after the step that brought
it had been seen."""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace
from typing import Any

import pytest

from durable_teams.gateway.core.sse import sse_response
from durable_teams.gateway.doors.langgraph import langgraph_stream
from durable_teams.gateway.doors.langgraph.langgraph_stream import RunStream, stream_error
from durable_teams.gateway.doors.langgraph.langgraph_wire import RunRef
from durable_teams.live.hub import LocalHub
from durable_teams.workflows.conversation_reads import ConversationStatus, TurnOutcome
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply

pytestmark = pytest.mark.pure

REPLY = TurnReply(turn=1, text="1,977,586", agent="supervisor")
MESSAGES = [Message(role="user", content="how many?"), Message(role="assistant", content="1,977,586",
                                                                  name="supervisor")]
HANGS_AFTER = 10.0
"""Seconds after which a stream that has not ended is taken as never ending (it ends at once)."""


class StandInThread:
    """The thread a run's stream reads: its history's long poll (a first look, then no step
    ever, or a failure), its `turn_outcome` update (telling `told` when `when` comes: with the
    long poll's first look, or while the stream reads the conversation), its conversation and
    status."""

    def __init__(self, when: str, told: TurnOutcome | Exception | None, watch_fails: bool = False) -> None:
        self.when, self.told, self.watch_fails = when, told, watch_fails
        self.update: asyncio.Future[TurnOutcome | None] = asyncio.get_running_loop().create_future()
        self.update_ended = asyncio.Event()
        self.client, self.poll_seconds = None, 0.0
        self.hub, self.log = LocalHub(), SimpleNamespace(quiet_seconds=3.0)  # no worker announces on it

    async def tell(self) -> None:
        """The update ends, and the stream's task waiting on it with it."""
        if isinstance(self.told, Exception):
            self.update.set_exception(self.told)
        else:
            self.update.set_result(self.told)
        await self.update_ended.wait()

    async def outcome(self) -> TurnOutcome | None:
        try:
            return await self.update
        finally:
            self.update_ended.set()

    async def watch_growth(self, client: Any, thread: str, grown: asyncio.Event) -> None:
        try:
            if self.when == "first look":
                self.update.set_result(self.told)  # type: ignore[arg-type]
            grown.set()
            if self.watch_fails:
                raise ConnectionError("the history's long poll failed")
            await asyncio.Event().wait()  # no step after this one
        finally:
            grown.set()

    async def conversation_after(self, gw: Any, thread: str, known: list[Message]) -> list[Message]:
        if self.when == "reads" and not self.update.done():
            await self.tell()
        return MESSAGES

    async def status(self, thread: str) -> ConversationStatus:
        return ConversationStatus(active_agent=None, turns=1, model_calls=1, pending=[], queued_turns=0,
                                  last_reply=REPLY, closed=False)


async def streamed(thread: StandInThread, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The (event, data) frames of run t1's stream as the gateway sends them, until it ends."""
    monkeypatch.setattr(langgraph_stream, "watch_growth", thread.watch_growth)
    monkeypatch.setattr(langgraph_stream, "conversation_after", thread.conversation_after)
    monkeypatch.setattr(RunStream, "_outcome", thread.outcome)
    run = RunStream(thread, "th", RunRef(1), "faang", 0)  # type: ignore[arg-type]
    body = sse_response(run.frames(["values", "events"]), error_frame=stream_error).body_iterator

    async def to_the_end() -> list[tuple[str, Any]]:
        frames = []
        async for frame in body:
            lines = dict(line.split(": ", 1) for line in str(frame).splitlines() if ": " in line)
            frames.append((lines["event"], json.loads(lines["data"])))
        return frames
    return await asyncio.wait_for(to_the_end(), HANGS_AFTER)


@pytest.mark.parametrize(("when", "watch_fails"), [("reads", False), ("first look", False), ("reads", True)],
                         ids=["outcome-during-the-reads", "outcome-with-the-first-look", "long-poll-failed"])
async def test_a_stream_ends_when_the_update_tells_the_reply(when: str, watch_fails: bool,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    thread = StandInThread(when, TurnOutcome(turn=1, reply=REPLY), watch_fails)
    frames = await streamed(thread, monkeypatch)

    assert [event for event, _ in frames] == ["metadata", "events", "values", "values", "events", "events"]
    assert frames[3][1]["messages"][-1]["content"] == "1,977,586"
    assert frames[-1][1]["event"] == "on_chain_end"


async def test_a_stream_ends_by_the_thread_status_when_the_update_and_the_long_poll_fail(
        monkeypatch: pytest.MonkeyPatch) -> None:
    thread = StandInThread("reads", None, watch_fails=True)  # the update could not tell
    frames = await streamed(thread, monkeypatch)

    assert [event for event, _ in frames] == ["metadata", "events", "values", "values", "events", "events"]
    assert frames[-1][1]["data"]["output"]["messages"][-1]["content"] == "1,977,586"


async def test_a_stream_whose_update_fails_unexpectedly_ends_with_an_error_frame(
        monkeypatch: pytest.MonkeyPatch) -> None:
    thread = StandInThread("reads", RuntimeError("the update failed"))
    frames = await streamed(thread, monkeypatch)

    assert frames[-1] == ("error", {"error": "StreamError",
                                    "message": "the stream stopped: the update failed"})
