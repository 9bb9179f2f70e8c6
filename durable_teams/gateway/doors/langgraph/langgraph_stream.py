"""A run's stream, in LangGraph's stream modes, read from the thread as the turn goes: the
shared conversation's new messages as `values`, `updates` (by the agent that wrote them),
`messages` / `messages-tuple` and `events`, what a tool wrote to its stream writer as `custom`;
`__interrupt__` when the turn waits for a person.
The stream ends when the run does: the turn answered, failed, cancelled, or interrupted.

A run waits the core's way (durable_teams/client/turn_outcome.py): its outcome (the turn's
reply, or a question the run had not seen) comes from the `turn_outcome` update, one call the
server holds; a stream's steps come from one long poll of the thread's history
(`watch_growth`, over durable_teams/client/reply_watch.py), the conversation read once per step
from where it was read last. `wait` and `join` read it once, at the outcome. When the update
cannot tell (a worker of an earlier release, a run continued as new, another waiter of this
process on the thread), the thread's status is read with each step instead, and at least
every `STATUS_RELOOK_SECONDS`: the update's way has no timer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from durable_teams.client.refusals import ConversationEnded
from durable_teams.client.turn_outcome import OutcomeUnavailable, wait_outcome
from durable_teams.gateway.core.sse import sse_frame
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_queue import (
    cancelled_in_queue,
    never_began,
    turn_messages,
    working_turn,
)
from durable_teams.gateway.doors.langgraph.langgraph_reading import conversation_after, reply_of
from durable_teams.gateway.doors.langgraph.langgraph_waiting import (
    STATUS_RELOOK_SECONDS,
    kept,
    told_nothing,
    until_first,
    watch_growth,
)
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    RunRef,
    debug_events,
    interrupts_of,
    lc_message,
    values_of,
)
from durable_teams.workflows.conversation_reads import ConversationStatus, TurnOutcome
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import Question, TurnReply


@dataclass
class RunStream:
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
        try:
            while True:
                if watcher is None and (show or told_nothing(outcome)):
                    watcher = kept(watch_growth(self.gw.client, self.thread, grown))
                    await grown.wait()  # its first look at the history: the reads come after it
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
                await until_first(grown, None if settled else outcome, None if stopped else watcher,
                                  STATUS_RELOOK_SECONDS if by_status else None)
        finally:
            outcome.cancel()
            if watcher is not None:
                watcher.cancel()

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

    def metadata(self, node: str | None, step: int) -> dict[str, Any]:
        return {"thread_id": self.shown or self.thread, "run_id": self.run.id, "assistant_id": self.team,
                "graph_id": self.team, "langgraph_node": node, "langgraph_step": step}

    async def frames(self, modes: list[str], after: str | None = None) -> AsyncIterator[str]:
        """The run's SSE frames: `metadata` first, then each mode's events for each message,
        the same frames under the same ids however often it is read: `after`, a frame's id
        (`Last-Event-ID`), resumes the stream after that frame."""
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

    def message_frames(self, modes: list[str], messages: list[Message], index: int) -> list[str]:
        """The frames of message `index`: what its tool wrote to its stream writer (`custom`,
        as written while it ran: before the message), the values up to it, and each mode's
        event of it."""
        custom = messages[index].custom if "custom" in modes else None
        frames = [sse_frame("custom", json.dumps(data, separators=(",", ":"))) for data in custom or []]
        if "values" in modes:
            frames.append(sse_frame("values", values_of(messages[:index + 1])))
        message = messages[index]
        if message.role == "user" and message.kind == "message":  # the run's input: in `values`, no node's update
            return frames + self.debug_frames(modes, messages, index, None, None)
        node = node_of(messages, index)
        wire = lc_message(message, index)
        meta = self.metadata(node, index)
        if "updates" in modes:
            frames.append(sse_frame("updates", {node: {"messages": [wire]}}))
        if "messages-tuple" in modes:
            frames.append(sse_frame("messages", [wire, meta]))
        if "messages" in modes:
            frames.append(sse_frame("messages/metadata", {wire["id"]: {"metadata": meta}}))
            frames.append(sse_frame("messages/complete", [wire]))
        if "events" in modes:
            kind = "on_tool_end" if message.role == "tool" else "on_chat_model_end"
            frames.append(sse_frame("events", {"event": kind, "name": message.name or node, "run_id": self.run.id,
                                               "data": {"output": wire}, "metadata": meta,
                                               "tags": [], "parent_ids": [self.run.id]}))
        return frames + self.debug_frames(modes, messages, index, node, wire)

    def debug_frames(self, modes: list[str], messages: list[Message], index: int, node: str | None,
                     wire: dict[str, Any] | None) -> list[str]:
        if "debug" not in modes:
            return []
        return [sse_frame("debug", event)
                for event in debug_events(self.shown or self.thread, index, values_of(messages[:index + 1]), node, wire)]

    def end_frames(self, modes: list[str]) -> list[str]:
        frames = []
        if self.interrupts:  # a breakpoint's alone: {"__interrupt__": []} in updates, as LangGraph's
            waiting = interrupts_of(self.interrupts)
            for mode in ("values", "updates") if waiting else ("updates",):
                if mode in modes:
                    frames.append(sse_frame(mode, {"__interrupt__": waiting}))
        elif self.ending is not None and self.ending.status == "failed":
            frames.append(sse_frame("error", {"error": "RunFailed", "message": self.ending.text}))
        if "events" in modes:
            frames.append(sse_frame("events", self.chain_event(
                "on_chain_end", {"output": values_of(self.messages)})))
        return frames

    def chain_event(self, kind: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"event": kind, "name": self.team, "run_id": self.run.id, "data": data,
                "metadata": self.metadata(None, 0), "tags": [], "parent_ids": []}

    def final_values(self) -> dict[str, Any]:
        """What `wait` and `join` return: the state's values, with the interrupts when the run
        waits for a person, or `__error__` when the turn failed."""
        values = values_of(self.messages)
        if interrupts_of(self.interrupts):
            values["__interrupt__"] = interrupts_of(self.interrupts)
        elif self.ending is not None and self.ending.status == "failed":
            values["__error__"] = {"error": "RunFailed", "message": self.ending.text}
        return values


END = 10**9
"""The index the frames after the run's last message are numbered under."""


def frame_key(frame_id: str) -> tuple[int, int]:
    """A frame id (`<message index>.<frame>`) as what orders it; a malformed one orders first."""
    index, _, number = frame_id.partition(".")
    try:
        return int(index), int(number)
    except ValueError:
        return (-2, 0)


def numbered(index: int, frames: list[str], seen: tuple[int, int] | None) -> list[str]:
    """The frames of message `index` with their ids, those up to `seen` left out."""
    return [f"id: {index}.{n}\n{frame}" for n, frame in enumerate(frames)
            if seen is None or (index, n) > seen]


def node_of(messages: list[Message], index: int) -> str:
    """The agent (LangGraph's node) a message came from: an assistant message's author; a tool
    result's, the agent whose call it answers."""
    message = messages[index]
    if message.role == "assistant":
        return message.name or "agent"
    for earlier in range(index - 1, -1, -1):
        if messages[earlier].role == "assistant":
            return messages[earlier].name or "agent"
    return "agent"


def stream_error(message: str) -> str:
    return sse_frame("error", {"error": "StreamError", "message": message})
