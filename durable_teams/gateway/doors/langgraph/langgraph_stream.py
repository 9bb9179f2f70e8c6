"""A run's stream, in LangGraph's stream modes, read from the thread as the turn goes: the
shared conversation's new messages as `values`, `updates` (by the agent that wrote them),
`messages` / `messages-tuple` and `events`; `__interrupt__` when the turn waits for a person.
The stream ends when the run does: the turn answered, failed, cancelled, or interrupted."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from durable_teams.client.refusals import ConversationEnded
from durable_teams.client.reply_watch import history_growth
from durable_teams.gateway.core.sse import sse_frame
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.langgraph.langgraph_reading import reply_of
from durable_teams.gateway.doors.langgraph.langgraph_wire import (
    RunRef,
    debug_events,
    interrupts_of,
    lc_message,
    values_of,
)
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import Question, TurnReply
from durable_teams.workflows.turn_states import answering


@dataclass
class RunStream:
    """One run followed in the shared conversation from index `floor`: a resume's from there
    (`start` set), a turn's from its message, the `skip`+1-th turn message after `floor` (the
    turns queued before it come first). `seen`: the questions that waited before it began
    (a new question of its turn is this run's interrupt)."""

    gw: Gateway
    thread: str
    run: RunRef
    team: str
    floor: int
    skip: int = 0
    start: int | None = None
    seen: set[str] = field(default_factory=set)
    ending: TurnReply | None = None
    interrupts: list[Question] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    shown: str | None = None
    """The thread's id as the caller knows it (langgraph_tenancy.py); None: `thread`."""

    def located(self, messages: list[Message]) -> int | None:
        """Where the run's messages start, once its turn has begun (None: still queued)."""
        if self.start is None:
            skip = self.skip
            for index in range(self.floor, len(messages)):
                if messages[index].role == "user" and messages[index].kind == "message":
                    if skip == 0:
                        self.start = index
                        break
                    skip -= 1
        return self.start

    async def follow(self) -> AsyncIterator[tuple[list[Message], int]]:
        """(the conversation, how many of it were seen before) each time it grows, until the
        run ends (`ending`) or asks (`interrupts`)."""
        grown = asyncio.Event()
        watcher = asyncio.ensure_future(watch(self.gw, self.thread, grown))
        watcher.add_done_callback(lambda t: t.cancelled() or t.exception())  # its end is read below
        try:
            async for found in self._follow(grown, watcher):
                yield found
        finally:
            watcher.cancel()

    async def _follow(self, grown: asyncio.Event, watcher: asyncio.Future[None]
                      ) -> AsyncIterator[tuple[list[Message], int]]:
        sent, handle = -1, self.gw.client.get_workflow_handle(self.thread)
        while True:
            grown.clear()  # before the reads: a step after them wakes the wait below
            status = await self.gw.status(self.thread)  # before the messages: none appended before it is missed
            self.messages = await handle.query(TeamWorkflow.transcript, False)
            start = self.located(self.messages)
            if start is not None and len(self.messages) > sent:
                yield self.messages, max(sent, start)
                sent = len(self.messages)
            if status.last_reply is not None and status.last_reply.turn >= self.run.turn:
                self.ending = await reply_of(self.gw, self.thread, self.run.turn) or status.last_reply
                return
            fresh = [q for q in status.pending if q.question_id not in self.seen]
            if fresh and answering(status) == self.run.turn and start is not None:
                self.interrupts = fresh
                return
            if status.closed and not await self.gw.running(self.thread):
                raise ConversationEnded(f"thread {self.thread} ended before run {self.run.id} did")
            if watcher.done():  # the watch stopped (the server could not be reached): poll
                await asyncio.sleep(self.gw.poll_seconds)
                continue
            with contextlib.suppress(TimeoutError):  # a workflow task completed, or look again anyway
                await asyncio.wait_for(grown.wait(), FALLBACK_SECONDS)

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
        """The frames of message `index`: the values up to it, and each mode's event of it."""
        frames = []
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


FALLBACK_SECONDS = 2.0
"""How long a run's reader waits for the thread's history to grow before it reads it anyway."""
END = 10**9
"""The index the frames after the run's last message are numbered under."""


async def watch(gw: Gateway, thread: str, grown: asyncio.Event) -> None:
    """Set `grown` each time a workflow task of the thread completes (its state may have
    changed): a long poll of its history, not a query per poll interval."""
    try:
        async for _ in history_growth(gw.client, thread):
            grown.set()
    finally:
        grown.set()


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
