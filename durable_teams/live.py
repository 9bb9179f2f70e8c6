"""Live tokens: a model's text deltas, sent to subscribers while the model writes, outside
the workflow history (which still records each finished message once, as before).

Where deltas travel: a model backend calls `emit(text)` for each delta inside the `call_model`
activity; `streaming()` (entered by the activity) stamps each with the conversation, agent,
call and attempt, and publishes it on a `LiveHub`. The default hub, `LIVE`, is this process's:
the embedded setup (worker and gateway, or worker and `follow`, in one process) needs nothing
more. Nothing goes through Temporal: a signal or an update per delta (or per batch, as
Temporal's workflow-streams contrib does) would add an event to the history for each, which is
the bloat this avoids. Across processes the hub is the seam for a broker (Redis pub/sub, NATS):
a worker publishes there, gateways subscribe; deltas are best effort, and the finished message
in the log stays the truth.

A retried model call starts with a `reset` delta: subscribers discard that call's partial text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

QUEUE_LIMIT = 10_000
"""Deltas held for a subscriber that reads slower than the model writes; beyond, it misses
some (its final message still arrives whole from the log)."""


@dataclass(frozen=True)
class Delta:
    """A piece of an agent's text. `call` names the model call (agent and its call index);
    `position` is the log's length when the call was made (its message comes at or after
    it, so a reader can put deltas in order with the log); `reset` says: discard what this
    call sent so far (it is being retried)."""

    workflow_id: str
    agent: str
    call: str
    attempt: int
    text: str = ""
    reset: bool = False
    position: int = 0


@dataclass
class LiveHub:
    """Process-local publish/subscribe of deltas by workflow id."""

    subscribers: dict[str, set[asyncio.Queue[Delta]]] = field(default_factory=dict)

    def publish(self, delta: Delta) -> None:
        for queue in self.subscribers.get(delta.workflow_id, ()):
            try:
                queue.put_nowait(delta)
            except asyncio.QueueFull:
                pass  # a stalled reader misses deltas, never blocks the model call

    @contextmanager
    def subscribe(self, workflow_id: str) -> Iterator[asyncio.Queue[Delta]]:
        queue: asyncio.Queue[Delta] = asyncio.Queue(QUEUE_LIMIT)
        self.subscribers.setdefault(workflow_id, set()).add(queue)
        try:
            yield queue
        finally:
            left = self.subscribers.get(workflow_id, set())
            left.discard(queue)
            if not left:
                self.subscribers.pop(workflow_id, None)


LIVE = LiveHub()
_sink: ContextVar[Callable[[str], None] | None] = ContextVar("durable_teams_live_sink", default=None)


def emit(text: str) -> None:
    """Send a text delta of the model call in progress (nothing outside one)."""
    sink = _sink.get()
    if sink is not None and text:
        sink(text)


@contextmanager
def streaming(workflow_id: str, agent: str, call: str, attempt: int, hub: LiveHub = LIVE,
              position: int = 0) -> Iterator[None]:
    """While a model call runs, `emit` publishes its deltas on `hub`."""
    if attempt > 1:
        hub.publish(Delta(workflow_id, agent, call, attempt, reset=True, position=position))

    def sink(text: str) -> None:
        hub.publish(Delta(workflow_id, agent, call, attempt, text=text, position=position))
    token = _sink.set(sink)
    try:
        yield
    finally:
        _sink.reset(token)
