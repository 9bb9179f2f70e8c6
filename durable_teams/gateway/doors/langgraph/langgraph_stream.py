"""A run's stream, in LangGraph's stream modes, read from the thread as the turn goes: the
shared conversation's new messages as `values`, `updates` (by the agent that wrote them),
`messages` / `messages-tuple` and `events`, what a tool wrote to its stream writer as `custom`;
`__interrupt__` when the turn waits for a person.
The stream ends when the run does: the turn answered, failed, cancelled, or interrupted.

A run waits the core's way (durable_teams/client/turn_outcome.py): its outcome (the turn's
reply, or a question the run had not seen) comes from the `turn_outcome` update, one call the
server holds. A stream learns of the steps that add to the shared conversation from the
worker's announcements on the live hub (`Announced`, langgraph_waiting.py: subscribed before
its turn went in, when it began the run), the conversation read from where it was read last at
each such step and once more at the outcome, which confirms what was shown. Until the first
announcement (a worker that does not share the gateway's hub) and after a quiet while, its
steps come from one long poll of the thread's history (`watch_growth`, over
durable_teams/client/reply_watch.py), the conversation read once per step. `wait` and `join`
read it once, at the outcome. When the update cannot tell (a worker of an earlier release, a
run continued as new, another waiter of this process on the thread), the thread's status is
read with each step, on the history's watch, and at least every `STATUS_RELOOK_SECONDS`: the
update's way has no timer. The frames of each message: langgraph_frames.py."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from starlette.responses import StreamingResponse

from durable_teams.client.refusals import ConversationEnded
from durable_teams.client.turn_outcome import OutcomeUnavailable, wait_outcome
from durable_teams.gateway.core.sse import sse_frame, sse_response
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_frames import (
    END,
    RunFrames,
    frame_key,
    numbered,
)
from durable_teams.gateway.doors.langgraph.langgraph_queue import (
    cancelled_in_queue,
    never_began,
    turn_messages,
    working_turn,
)
from durable_teams.gateway.doors.langgraph.langgraph_reading import conversation_after, reply_of
from durable_teams.gateway.doors.langgraph.langgraph_waiting import (
    STATUS_RELOOK_SECONDS,
    Announced,
    kept,
    told_nothing,
    until_first,
    watch_growth,
)
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    RunRef,
)
from durable_teams.live.hub import Live
from durable_teams.workflows.conversation_reads import ConversationStatus, TurnOutcome
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import Question, TurnReply

T = TypeVar("T")


@dataclass
class RunStream(RunFrames):
    """One run followed in the shared conversation from index `floor`: a resume's from there
    (`start` set), a turn's from its message, the `skip`+1-th turn message after `floor` (the
    `skip` turns numbered just before it come first, less those of them cancelled before they
    began: `dropped`, langgraph_queue.py). `seen`: the questions that waited before it began
    (a new question of its turn is this run's interrupt). `messages`: the shared conversation
    as read when the run was begun (at least up to `floor`), read on from there."""

    gw: Gateway
    thread: str
    run: RunRef
    team: str
    floor: int
    skip: int = 0
    start: int | None = None
    seen: set[str] = field(default_factory=set)
    messages: list[Message] = field(default_factory=list)
    created: datetime | None = None
    """When the thread was created, as read when the run was begun."""
    ending: TurnReply | None = None
    interrupts: list[Question] = field(default_factory=list)
    shown: str | None = None
    """The thread's id as the caller knows it (langgraph_tenancy.py); None: `thread`."""
    dropped: set[int] = field(default_factory=set)
    begun: int = 0
    """The turn messages after `floor` when `dropped` was last read."""
    subscription: AbstractAsyncContextManager[asyncio.Queue[Live]] | None = None
    steps: asyncio.Queue[Live] | None = None
    """The thread's announced steps (`subscribe_steps`, entered: a stream's, subscribed before
    its turn went in when it began it; closed by `unsubscribe`)."""

    async def subscribe(self) -> None:
        """Take the thread's announced steps from now on (a stream shows each step from them)."""
        if self.subscription is None:
            subscription = self.gw.hub.subscribe_steps(self.thread)
            self.steps = await subscription.__aenter__()
            self.subscription = subscription

    async def unsubscribe(self) -> None:
        if self.subscription is not None:
            subscription, self.subscription, self.steps = self.subscription, None, None
            await subscription.__aexit__(None, None, None)

    def response(self, modes: list[str], after: str | None, headers: dict[str, str] | None,
                 scope: str | None) -> StreamingResponse:
        """The run's `frames` as an SSE response, which closes the run's subscription when it is
        over however it ends (even when its body never runs: the client gone at once)."""
        return sse_response(self.frames(modes, after), headers, error_frame=stream_error, scope=scope,
                            close=self.unsubscribe)

    async def unsubscribed_if_raised(self, step: Awaitable[T]) -> T:
        """`step`'s result; unsubscribed if it raises (before a response owns the subscription)."""
        try:
            return await step
        except BaseException:
            await self.unsubscribe()
            raise

    async def locate(self) -> int | None:
        """Where the run's messages start in `messages`, once its turn has begun (None: still
        queued); the turns before it cancelled in the queue read again when more turns began."""
        begun = turn_messages(self.messages, self.floor)
        if self.start is None and self.skip > len(self.dropped) and len(begun) > self.begun:
            self.begun = len(begun)
            self.dropped = await never_began(self.gw, self.thread, range(self.run.turn - self.skip, self.run.turn))
        if self.start is None and len(begun) > self.skip - len(self.dropped):
            self.start = begun[self.skip - len(self.dropped)]
        return self.start

    async def follow(self) -> AsyncIterator[tuple[list[Message], int]]:
        """(the conversation, how many of it were seen before) each time it grows, until the
        run ends (`ending`) or asks (`interrupts`)."""
        async for found in self._follow(show=True):
            yield found

    async def settle(self) -> None:
        """Wait for the run's end (`ending`) or its question (`interrupts`), the conversation
        read once then (what `wait` and `join` return)."""
        async for _ in self._follow(show=False):
            pass

    async def _follow(self, show: bool) -> AsyncIterator[tuple[list[Message], int]]:
        grown, sent = asyncio.Event(), -1
        outcome = kept(self._outcome())
        watcher: asyncio.Future[None] | None = None
        news = Announced(self.steps, grown, self.gw.log.quiet_seconds) if show and self.steps else None
        listener = kept(news.listen()) if news is not None else None
        try:
            while True:
                watcher = await self._watching(watcher, grown, outcome, show, news)
                # no await from here to `grown.clear()`: a step after this is seen by the wait below
                settled = outcome.done()  # before the reads: what it tells of is in them
                by_status = settled and outcome.result() is None  # the update could not tell
                stopped = watcher is not None and watcher.done()  # the thread stopped running
                grown.clear()  # before the reads: a step after them wakes the wait below
                # the status before the messages: none appended before it is missed
                status = await self.gw.status(self.thread) if by_status else None
                if show or settled:
                    self.messages = await conversation_after(self.gw, self.thread, self.messages)
                    start = await self.locate()
                    if start is not None and len(self.messages) > sent:
                        yield self.messages, max(sent, start)
                        sent = len(self.messages)
                if settled and await self._judged(outcome.result(), status):
                    return
                if settled and not by_status:  # an earlier turn's question: wait for the next
                    outcome = kept(self._outcome())
                    continue
                if stopped and by_status:
                    assert watcher is not None
                    if watcher.cancelled() or watcher.exception() is None:
                        raise ConversationEnded(f"thread {self.thread} ended before run {self.run.id} did")
                    # its long poll failed (the server busy or away): look again after a while
                    await asyncio.sleep(self.gw.poll_seconds)
                    watcher = None
                    continue
                # an outcome that came during the reads was not judged: it ends the wait at once
                await until_first(grown, None if settled else outcome, None if stopped else watcher or listener,
                                  STATUS_RELOOK_SECONDS if by_status else None)
        finally:
            for task in (outcome, watcher, listener):
                if task is not None:
                    task.cancel()

    async def _watching(self, watcher: asyncio.Future[None] | None, grown: asyncio.Event,
                        outcome: asyncio.Future[TurnOutcome | None], show: bool,
                        news: Announced | None) -> asyncio.Future[None] | None:
        """The watch of the thread's history the reader needs now: none while the worker's
        announcements tell of each step and the update tells the outcome; else one (begun
        here, after its first look at the history: the reads come after it)."""
        if news is not None:
            news.drain()
        announced = news is not None and news.trusted and not told_nothing(outcome)
        if watcher is not None and announced:
            watcher.cancel()  # announcements tell of each step: no watch of the history
            return None
        if watcher is None and not announced and (show or told_nothing(outcome)):
            watcher = kept(watch_growth(self.gw.client, self.thread, grown))
            await grown.wait()
        return watcher

    async def _outcome(self) -> TurnOutcome | None:
        """The run's turn's outcome, its reply or a question not in `seen` (None: the update
        cannot tell)."""
        try:
            return await wait_outcome(self.gw.client, self.thread, self.run.turn, seen=self.seen)
        except OutcomeUnavailable:
            return None

    async def _judged(self, told: TurnOutcome | None, status: ConversationStatus | None) -> bool:
        """Whether the run has ended (`ending`) or asks (`interrupts`), by what the update told
        or, when it could not, the thread's `status`. A question the update tells of is the
        run's when its turn is the one the thread works on (else an earlier turn's: seen)."""
        if told is not None and told.reply is not None:
            self.ending = told.reply
            return True
        if status is None:  # a question: all those asked now, and whose turn asks
            status = await self.gw.status(self.thread)
        last = status.last_reply
        if last is not None and last.turn >= self.run.turn:
            mine = last if last.turn == self.run.turn else await reply_of(self.gw, self.thread, self.run.turn)
            if mine is not None or not cancelled_in_queue(last):  # a later turn cancelled in the queue: not an end
                self.ending = mine or last
                return True
        fresh = [q for q in status.pending if q.question_id not in self.seen]
        if fresh and self.start is not None and await working_turn(self.gw, self.thread, status) == self.run.turn:
            self.interrupts = fresh
            return True
        if told is not None:
            self.seen |= {q.question_id for q in fresh}
        return False

    async def frames(self, modes: list[str], after: str | None = None) -> AsyncIterator[str]:
        """The run's SSE frames: `metadata` first, then each mode's events for each message,
        the same frames under the same ids however often it is read: `after`, a frame's id
        (`Last-Event-ID`), resumes the stream after that frame."""
        await self.subscribe()  # a stream it began is subscribed already
        try:
            async for frame in self._frames(modes, after):
                yield frame
        finally:
            await self.unsubscribe()

    async def _frames(self, modes: list[str], after: str | None) -> AsyncIterator[str]:
        seen = frame_key(after) if after else None
        head = [sse_frame("metadata", {"run_id": self.run.id, "thread_id": self.shown or self.thread, "attempt": 1})]
        if "events" in modes:
            head.append(sse_frame("events", self.chain_event("on_chain_start", {"input": None})))
        for frame in numbered(-1, head, seen):
            yield frame
        async for messages, sent in self.follow():
            for index in range(sent, len(messages)):
                for frame in numbered(index, self.message_frames(modes, messages, index), seen):
                    yield frame
        for frame in numbered(END, self.end_frames(modes), seen):
            yield frame

async def subscribed_run(gw: Gateway, thread: str, begin: Callable[[], Awaitable[RunStream]]) -> RunStream:
    """The run `begin()` begins, subscribed to the thread's announced steps before it goes in."""
    subscription = gw.hub.subscribe_steps(thread)
    steps = await subscription.__aenter__()
    try:
        run = await begin()
    except BaseException:
        await subscription.__aexit__(None, None, None)
        raise
    run.subscription, run.steps = subscription, steps
    return run


def stream_error(message: str) -> str:
    return sse_frame("error", {"error": "StreamError", "message": message})
