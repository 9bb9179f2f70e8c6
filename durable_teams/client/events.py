"""A conversation as a stream of typed events, read while it happens (ABI's event stream).

    async for event in follow(client, "faang-demo-1234"):
        print(event.type, event.agent, event.text)

Events come from the workflow's log, which holds every message once (the shared conversation
and each agent's private steps), read page by page with the `log_page` query: no history is
added and nothing is missed. Indices hold across continue-as-new, so `start=` resumes a stream.
The stream ends with a `done` event when the conversation's workflow is no longer running. A
closed conversation's log is rebuilt from its history in this process: no worker needed.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import nullcontext
from typing import Any, Literal

from pydantic import BaseModel
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from durable_teams.client.replay_state import ReplayFailed, replayed_log
from durable_teams.client.step_watch import StepWatch
from durable_teams.live.hub import Delta, LiveHub, LiveOrder
from durable_teams.workflows.builtins import ASK_HUMAN
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import LogPage
from durable_teams.workflows.messages import Message, Usage
from durable_teams.workflows.transcript import Transcript

EventType = Literal[
    "user_message", "ai_message", "tool_usage", "question", "tool_response", "handoff",
    "routing", "error", "done", "ai_message_delta",
]


class Event(BaseModel):
    """One thing that happened. `index` is the message's place in the log (-1 for `done`);
    `private` marks a worker's own steps, which the shared conversation does not show."""

    index: int
    type: EventType
    agent: str | None = None
    text: str = ""
    tool: str | None = None
    arguments: str | None = None
    private: bool = False
    usage: Usage | None = None
    """On the first event of a model's reply: the tokens that model call used."""
    call: str | None = None
    """On `ai_message_delta`: the model call it belongs to (agent:index)."""
    reset: bool = False
    """On `ai_message_delta`: discard what this call sent so far (it is being retried)."""


def delta_event(delta: Delta) -> Event:
    """A live text delta (durable_teams/live/hub.py) as an event; not part of the log (index -1)."""
    return Event(index=-1, type="ai_message_delta", agent=delta.agent, text=delta.text,
                 private=not delta.shared, call=delta.call, reset=delta.reset)


def events_of(index: int, message: Message, shared: bool | None = None) -> list[Event]:
    """The events one log message stands for: text and each tool call of an assistant message
    are separate events (ABI's ai_message and tool_usage). `shared`: whether the message is
    part of the shared conversation (a worker's answer is, once it returns); by default, when
    it was written there."""
    private = message.agent_run != 0 if shared is None else not shared
    if message.role == "user":
        kind: EventType = "routing" if message.kind == "routing" else "user_message"
        return [Event(index=index, type=kind, agent=message.name, text=message.content or "", private=private)]
    if message.role == "tool":
        kind = {"handoff": "handoff", "handoff_back": "handoff", "error": "error",
                "routing": "routing"}.get(message.kind, "tool_response")  # type: ignore[assignment]
        return [Event(index=index, type=kind, tool=message.name, text=message.content or "", private=private)]
    out: list[Event] = []
    if message.content:
        kind = {"error": "error", "notice": "error", "routing": "routing", "handoff_back": "handoff"}.get(
            message.kind, "ai_message")  # type: ignore[assignment]
        out.append(Event(index=index, type=kind, agent=message.name, text=message.content, private=private))
    for call in message.tool_calls:
        out.append(Event(index=index, type="question" if call.name == ASK_HUMAN else "tool_usage",
                         agent=message.name, tool=call.name, arguments=call.arguments, private=private))
    if out and message.usage is not None:
        out[0].usage = message.usage
    return out


async def follow(
    client: Client, workflow_id: str, *, start: int = 0, poll_seconds: float = 0.25, page_size: int = 200,
    live: LiveHub | None = None,
) -> AsyncIterator[Event]:
    """Yield the conversation's events from log index `start` on, as they happen, until its
    workflow stops running. A workflow reports no event to a client when it appends a
    message: this reads the log when its history says a step was scheduled or completed. With `live`, text deltas of
    the model calls in progress come too, as `ai_message_delta` events."""
    handle = client.get_workflow_handle(workflow_id)  # no run id: follows continue-as-new
    described = await handle.describe()
    if described.status not in (WorkflowExecutionStatus.RUNNING, None):
        # Closed: its log is rebuilt from its history here, so no worker has to replay it for
        # a query.
        transcript = await closed_log(client, workflow_id)
        if transcript is not None:
            shared = set(transcript.shared)
            for index, message in enumerate(transcript.log[start:], start):
                for event in events_of(index, message, index in shared):
                    yield event
            yield Event(index=-1, type="done", text=described.status.name)
            return
    async with live.subscribe(workflow_id) if live is not None else nullcontext(None) as deltas:
        async for event in _follow_running(client, handle, start, poll_seconds, page_size, deltas):
            yield event


def page_events(order: LiveOrder, page: LogPage, start: int, by_page_shared: bool = True) -> Iterator[Event]:
    """The events of a page of the log read from `start`, each message's preceded by the held
    deltas of model calls made before it (`order`). `by_page_shared`: mark messages private as
    the page's `shared` says (a worker's answer joins the shared conversation when it returns);
    else as each was written."""
    marks = set(page.shared) if by_page_shared and page.shared else None
    for offset, message in enumerate(page.messages):
        at = start + offset
        yield from map(delta_event, order.ready(at))
        if message.role == "assistant":
            order.logged(at, message.name)
        yield from events_of(at, message, None if marks is None else at in marks)


async def _follow_running(client: Client, handle: WorkflowHandle[Any, Any], index: int,
                          poll_seconds: float, page_size: int,
                          deltas: asyncio.Queue[Delta] | None) -> AsyncIterator[Event]:
    """Page through a running conversation's log until it stops, with its live deltas. The
    log is read again only when a step of it is scheduled or completes unread (a long poll of
    its history, durable_teams/client/step_watch.py) or a delta came: a quiet conversation
    costs its followers nothing."""
    order = LiveOrder()
    ending = False
    status: WorkflowExecutionStatus | None = None
    steps = StepWatch(client, handle.id)
    watcher = asyncio.ensure_future(steps.run())
    try:
        while True:
            steps.ready.clear()
            page: LogPage = await handle.query(TeamWorkflow.log_page, args=[index, page_size])
            steps.read(page.history_length)
            if deltas is not None:  # after the read: see gateway/core/threads.py
                order.drain(deltas)
            for event in page_events(order, page, index):
                yield event
            index += len(page.messages)
            if index < page.total:
                continue
            for delta in order.ready(index):
                yield delta_event(delta)
            if ending:  # read once more after it stopped: nothing appended last is missed
                yield Event(index=-1, type="done", text=status.name if status else "")
                return
            if watcher.done():  # the run closed (or the long poll failed): still running?
                status = (await handle.describe()).status
                if status != WorkflowExecutionStatus.RUNNING:
                    ending = True
                    continue
                await asyncio.sleep(poll_seconds)
                steps = StepWatch(client, handle.id)
                watcher = asyncio.ensure_future(steps.run())
            news = await _until(steps.ready, deltas)
            if news is not None:
                order.hold(news)
    finally:
        watcher.cancel()


async def _until(grown: asyncio.Event, deltas: asyncio.Queue[Delta] | None) -> Delta | None:
    """Wait for the history to grow (None) or a live delta (returned)."""
    growing = asyncio.ensure_future(grown.wait())
    waits: list[asyncio.Future[Any]] = [growing]
    getting = asyncio.ensure_future(deltas.get()) if deltas is not None else None
    if getting is not None:
        waits.append(getting)
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        growing.cancel()
        if getting is not None and not getting.done():
            getting.cancel()
    return getting.result() if getting is not None and getting.done() and not getting.cancelled() else None


async def closed_log(client: Client, workflow_id: str) -> Transcript | None:
    """A closed conversation's log, from its replayed history; None when the history does not
    replay with this code (a query then reads it)."""
    try:
        return await replayed_log(client, workflow_id)
    except ReplayFailed:
        return None
