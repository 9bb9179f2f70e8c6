"""Live tokens: a model's text deltas, sent to subscribers while the model writes, outside
the workflow history (which still records each finished message once, as before).

Where deltas travel: a model backend calls `emit(text)` for each delta inside the `call_model`
activity; `streaming()` (entered by the activity) stamps each with the conversation, agent,
call and attempt, and publishes it on a `LiveHub`. Nothing goes through Temporal: a signal or an
update per delta (or per batch, as Temporal's workflow-streams contrib does) would add an event
to the history for each, the bloat this avoids. Two hubs:

- `LocalHub` (the default, `LIVE`): this process's. Enough when the worker and the reader (the
  gateway, `follow`, a demo) share a process, as in the embedded setup.
- `RedisHub` (durable_teams/live/redis_hub.py, chosen by durable_teams/live/from_env.py, `DURABLE_TEAMS_LIVE_URL=redis://...`): Redis
  pub/sub, one channel per conversation, so any worker publishes and any gateway or `follow`
  in another process or machine subscribes.

A nested team runs as a child workflow: its deltas go to its own readers and, marked private
and ready at once, to the readers of every conversation it runs inside. Deltas are best effort: a reader that connects late, falls behind or loses the broker misses
some; the finished message in the log stays the truth. A retried model call starts with a
`reset` delta: subscribers discard that call's partial text.

Steps travel the same way: each message a conversation appends to its log is announced as a
`Logged` by the worker that ran the workflow task (durable_teams/worker/log_announcer.py), to the
subscribers that ask for them (`subscribe_steps`: a gateway's turn stream,
durable_teams/gateway/core/thread_log.py). Best effort as deltas are: the log read at the end
of a turn is the truth.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

QUEUE_LIMIT = 10_000
"""Deltas held for a subscriber that reads slower than the model writes; beyond, it misses
some (its final message still arrives whole from the log)."""

LIVE_URL_ENV = "DURABLE_TEAMS_LIVE_URL"
"""Where deltas travel between processes (`redis://host:6379/0`); unset: this process only."""


class LiveHubError(RuntimeError):
    """DURABLE_TEAMS_LIVE_URL names no usable broker (a bad URL, the extra not installed)."""


@dataclass(frozen=True)
class Delta:
    """A piece of an agent's text. `call` names the model call (agent and its call index);
    `position` is the log's length when the call was made (its message comes at or after
    it, so a reader can put deltas in order with the log; -1 on a nested team's delta sent to
    a parent's readers: not ordered with that log); `reset` says: discard what this
    call sent so far (it is being retried); `shared` is False for text a supervisor's worker
    writes in its own run (it goes back to the supervisor, not to the user)."""

    workflow_id: str
    agent: str
    call: str
    attempt: int
    text: str = ""
    reset: bool = False
    position: int = 0
    shared: bool = True


@dataclass(frozen=True)
class Logged:
    """A message appended to a conversation's log (run `run_id`, at log index `index`), as the
    log has it (`message`: its JSON form, the `Message` a `log_page` read returns), announced
    when the workflow task that appended it ended on its worker."""

    workflow_id: str
    run_id: str
    index: int
    message: dict[str, Any]


Live = Delta | Logged
"""What a conversation's channel carries."""


class LiveHub:
    """Publish/subscribe of deltas (and log announcements) by workflow id."""

    def publish(self, delta: Live) -> None:
        """Send `delta` to the conversation's subscribers; never blocks, never raises."""
        raise NotImplementedError

    async def flush(self) -> None:
        """Wait (briefly) until what was published has left this process."""

    def wants_steps(self, workflow_id: str) -> bool:
        """Whether a `Logged` of the conversation may reach anyone (a broker's subscribers
        are elsewhere: always)."""
        return True

    def subscribe(self, workflow_id: str) -> AbstractAsyncContextManager[asyncio.Queue[Delta]]:
        """A queue of the conversation's deltas, from the moment this is entered."""
        raise NotImplementedError

    def subscribe_steps(self, workflow_id: str) -> AbstractAsyncContextManager[asyncio.Queue[Live]]:
        """A queue of the conversation's deltas and `Logged` announcements, in the order they
        were published, from the moment this is entered."""
        raise NotImplementedError


@dataclass
class LocalHub(LiveHub):
    """This process's subscribers (`step_subscribers`: those of `subscribe_steps`)."""

    subscribers: dict[str, set[asyncio.Queue[Delta]]] = field(default_factory=dict)
    step_subscribers: dict[str, set[asyncio.Queue[Live]]] = field(default_factory=dict)

    def publish(self, delta: Live) -> None:
        if isinstance(delta, Delta):
            deliver(self.subscribers.get(delta.workflow_id, ()), delta)
        deliver(self.step_subscribers.get(delta.workflow_id, ()), delta)

    def wants_steps(self, workflow_id: str) -> bool:
        return workflow_id in self.step_subscribers

    def subscribe(self, workflow_id: str) -> AbstractAsyncContextManager[asyncio.Queue[Delta]]:
        return _joined(self.subscribers, workflow_id)

    def subscribe_steps(self, workflow_id: str) -> AbstractAsyncContextManager[asyncio.Queue[Live]]:
        return _joined(self.step_subscribers, workflow_id)

    def subscriber_count(self, workflow_id: str) -> int:
        """How many subscriptions (of both kinds) the conversation has open in this process."""
        return len(self.subscribers.get(workflow_id, ())) + len(self.step_subscribers.get(workflow_id, ()))


@asynccontextmanager
async def _joined(subscribers: dict[str, set[asyncio.Queue[Any]]], workflow_id: str) -> AsyncIterator[asyncio.Queue[Any]]:
    queue: asyncio.Queue[Any] = asyncio.Queue(QUEUE_LIMIT)
    subscribers.setdefault(workflow_id, set()).add(queue)
    try:
        yield queue
    finally:
        left = subscribers.get(workflow_id, set())
        left.discard(queue)
        if not left:
            subscribers.pop(workflow_id, None)


def deliver(queues: Iterable[asyncio.Queue[Any]], delta: Live) -> None:
    for queue in queues:
        try:
            queue.put_nowait(delta)
        except asyncio.QueueFull:
            pass  # a stalled reader misses deltas (a step: read from the log), never blocks the sender


LIVE = LocalHub()
_sink: ContextVar[Callable[[str], None] | None] = ContextVar("durable_teams_live_sink", default=None)


def emit(text: str) -> None:
    """Send a text delta of the model call in progress (nothing outside one)."""
    sink = _sink.get()
    if sink is not None and text:
        sink(text)


@asynccontextmanager
async def streaming(workflow_id: str, agent: str, call: str, attempt: int, hub: LiveHub = LIVE,
                    position: int = 0, shared: bool = True) -> AsyncIterator[None]:
    """While a model call runs, `emit` publishes its deltas on `hub`; on the way out they are
    flushed, so they leave before the finished message (the activity's result) does."""
    def delta(**fields: Any) -> Delta:
        return Delta(workflow_id, agent, call, attempt, position=position, shared=shared, **fields)

    parents = ancestors(workflow_id)
    loop, loop_thread = asyncio.get_running_loop(), threading.get_ident()

    def publish(d: Delta) -> None:
        hub.publish(d)
        for parent in parents:  # a nested team's text reaches its parents' readers too, at once
            hub.publish(dataclasses.replace(d, workflow_id=parent, position=-1, shared=False))

    def sink(text: str) -> None:  # hubs are the event loop's: a backend's own thread hands over
        if threading.get_ident() == loop_thread:
            publish(delta(text=text))
        else:
            loop.call_soon_threadsafe(publish, delta(text=text))
    if attempt > 1:
        publish(delta(reset=True))
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)
        await hub.flush()


CHILD_ID = re.compile(r"(.+)/[a-zA-Z0-9_-]{1,64}-\d+")
"""A nested team's child workflow id: `<parent id>/<agent>-<run>` (workflows/children.py)."""


def ancestors(workflow_id: str) -> list[str]:
    """The conversations a child workflow runs inside, nearest first."""
    found = []
    while (match := CHILD_ID.fullmatch(workflow_id)) is not None:
        workflow_id = match.group(1)
        found.append(workflow_id)
    return found


@dataclass
class LiveOrder:
    """Puts deltas in order with the log a reader pages through: a delta waits until the
    messages logged before its call are out, and one that arrives after its call's message
    (possible across processes) is dropped, since that message carried the whole text."""

    held: list[Delta] = field(default_factory=list)
    finished: dict[str, int] = field(default_factory=dict)
    """Per agent, the log index of its latest message handed out."""

    def drain(self, deltas: asyncio.Queue[Delta]) -> None:
        """Hold what has arrived, without waiting."""
        while not deltas.empty():
            self.hold(deltas.get_nowait())

    def hold(self, delta: Delta) -> None:
        if delta.position < 0 or delta.position > self.finished.get(delta.agent, -1):
            self.held.append(delta)

    def logged(self, index: int, agent: str | None) -> None:
        """An assistant message of `agent` at `index` was handed out: its call is over."""
        if agent:
            self.finished[agent] = max(index, self.finished.get(agent, -1))
            self.held = [d for d in self.held if d.agent != agent or d.position > index or d.position < 0]

    def ready(self, upto: int) -> list[Delta]:
        """Remove and return, in order, the held deltas whose call began by log index `upto`."""
        out = [d for d in self.held if d.position <= upto]
        self.held = [d for d in self.held if d.position > upto]
        return out
