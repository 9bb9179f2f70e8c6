"""How a LangGraph run's reader waits (langgraph_stream.py): for the next step of the thread
that may add to the shared conversation (announced by the worker on the live hub: `Announced`;
without announcements, one long poll of its history) or the run's outcome (the `turn_outcome`
update), whichever comes first, with the tasks it leaves behind read so asyncio logs nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from temporalio.client import Client

from durable_teams.client.reply_watch import history_growth
from durable_teams.live.hub import Live, Logged
from durable_teams.workflows.conversation_reads import TurnOutcome
from durable_teams.workflows.messages import Message

T = TypeVar("T")

STATUS_RELOOK_SECONDS = 2.0
"""When the update cannot tell a run's outcome, its reader reads the thread's status at each
step and at least this often: several long polls of one thread's history from one process
were seen to wake late (the update's way has no timer)."""

def kept(coroutine: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
    """A task whose outcome may go unread (the client left): reading it when it ends keeps
    asyncio from logging 'Task exception was never retrieved'."""
    task = asyncio.ensure_future(coroutine)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task


def told_nothing(outcome: asyncio.Future[TurnOutcome | None]) -> bool:
    """Whether the update ended without telling the run's outcome (it could not)."""
    return outcome.done() and outcome.result() is None


async def until_first(grown: asyncio.Event, outcome: asyncio.Future[Any] | None,
                      watcher: asyncio.Future[None] | None, relook: float | None = None) -> None:
    """Wait for the next step of the thread (`grown`, set by the history's long poll, also
    when it stops), or the run's `outcome` (None: judged already; one that ended and is not
    judged yet ends the wait at once); without a watch, the outcome alone.

    The outcome is waited on until it is judged, never left out because it has ended: it
    may end after the loop looked (during its reads, or while it yielded a frame), and the
    step that brought it may have been seen before `grown` was cleared. Left out, the loop
    would wait for a step that never comes (a stream that gave its last frame and never
    ended, under load)."""
    waits: list[asyncio.Future[Any]] = [] if outcome is None else [outcome]
    step = asyncio.ensure_future(grown.wait()) if watcher is not None else None
    if step is not None:
        waits.append(step)
    try:
        await asyncio.wait(waits, timeout=relook, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if step is not None:
            step.cancel()


async def watch_growth(client: Client, thread: str, grown: asyncio.Event) -> None:
    """Set `grown` each time a step of the conversation completes (a long poll of its history,
    durable_teams/client/reply_watch.py), and once more when the watch ends."""
    try:
        async for _ in history_growth(client, thread):
            grown.set()
    finally:
        grown.set()


@dataclass
class Announced:
    """What the worker announces of a thread's log (`queue`: the thread's `subscribe_steps`):
    `grown` set at each message of the shared conversation's own (agent run 0: the person's,
    the supervisor's, a handoff's; a worker's messages join the shared conversation in the
    workflow task that appends such a message, or at the turn's end, when the run's outcome
    has the conversation read), once the calls of its assistant messages have their tool
    messages (`open_calls`: a call and its result are read together; one that waits for a
    person ends the run with its question); an answer (an assistant message with no call) is
    read with the outcome it brings. `trusted` once one came and until `quiet_seconds`
    pass with no news (then `grown` is set once: the history is watched until the next one)."""

    queue: asyncio.Queue[Live]
    grown: asyncio.Event
    quiet_seconds: float
    heard: bool = False
    quiet: bool = False
    open_calls: set[str] = field(default_factory=set)

    @property
    def trusted(self) -> bool:
        return self.heard and not self.quiet

    def take(self, item: Live) -> None:
        self.quiet = False
        if not isinstance(item, Logged):
            return
        self.heard = True
        try:
            message = Message.model_validate(item.message)
        except ValueError:  # not a message this release reads: read the conversation
            self.grown.set()
            return
        if message.agent_run != 0:
            return
        if message.role == "tool" and message.tool_call_id:
            self.open_calls.discard(message.tool_call_id)
        self.open_calls |= {call.id for call in message.tool_calls or []}
        if message.role == "assistant" and message.kind == "message" and not message.tool_calls:
            return  # the turn's answer: read with its outcome, which comes with it
        if not self.open_calls:
            self.grown.set()

    def drain(self) -> None:
        while not self.queue.empty():
            self.take(self.queue.get_nowait())

    async def listen(self) -> None:
        while True:
            try:
                item = await asyncio.wait_for(self.queue.get(), self.quiet_seconds)
            except TimeoutError:
                if self.trusted:
                    self.quiet = True
                    self.grown.set()
                continue
            self.take(item)
