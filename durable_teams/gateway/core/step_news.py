"""What a reader of a turn's steps learns next (`StepNews`): the messages the worker announces
on the live hub as it appends them (`StepFeed`), or, without announcements, when to read the
log (a `StepWatch`). Used by every stream that shows a turn's steps: the native turn stream
(durable_teams/gateway/core/turn_stream.py), a streamed Responses request, a LangGraph run's stream.

The worker that runs a conversation's workflow task announces each message the task appended
(`Logged`, durable_teams/worker/log_announcer.py) on the thread's channel, where its model calls
send their text deltas. A reader subscribed to that channel (`LiveHub.subscribe_steps`) takes
the announcements in log order (`StepFeed`: index after index; an announcement past the next
index expected, a gap, asks for one read of the log from there), and reads the log once more
at the turn's end to confirm what it showed. So a turn costs it one read instead of a long poll
of the history and a query per step.

Nothing is missed or stalls without announcements: until the first one arrives (a worker in
another process with no shared hub, an earlier release's worker) and again once
`quiet_seconds` pass with neither an announcement nor a delta (a message lost on the way, a
broker that went away), the reader reads the log the earlier way, at each step a `StepWatch`
tells of (durable_teams/client/step_watch.py); the next announcement ends that.

The log is the truth: a message announced and then not recorded (its worker died before
Temporal had its workflow task; see durable_teams/worker/log_announcer.py) may have been shown
at an index where the log holds another once the task ran again. The final read finds it; a
stream cannot take back what it showed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from temporalio.client import Client

from durable_teams.client.step_watch import StepWatch
from durable_teams.live.hub import Delta, Live, LiveOrder, Logged
from durable_teams.workflows.messages import Message


@dataclass
class StepFeed:
    """Where a stream stands in the log: `index`, the next message to show; the announced
    messages past it (`ahead`), and those shown from announcements (`shown`, confirmed at the end)."""

    index: int
    ahead: dict[int, Message] = field(default_factory=dict)
    shown: dict[int, Message] = field(default_factory=dict)
    run_id: str | None = None
    heard: bool = False
    """Whether an announcement of this thread arrived."""
    replaced: bool = False
    """Whether a new run announced an index already passed (a rewind): announcements no longer
    say where the log stands, and the stream reads it (as before) from then on."""

    def hear(self, logged: Logged) -> None:
        try:
            message = Message.model_validate(logged.message)
        except ValueError:  # not a message this release reads: a gap, read from the log
            return
        self.heard = True
        if self.run_id is not None and logged.run_id != self.run_id and logged.index < self.index:
            self.replaced = True
        self.run_id = logged.run_id
        if logged.index >= self.index:
            self.ahead[logged.index] = message

    def ready(self) -> list[Message]:
        """The announced messages from `index` on with no gap before them (taken: `index` moves)."""
        found = []
        while self.index in self.ahead:
            message = self.ahead.pop(self.index)
            self.shown[self.index] = message
            found.append(message)
            self.index += 1
        return found

    def gap(self) -> bool:
        """Whether a message past `index` was announced while `index` was not (a read fills it)."""
        return bool(self.ahead) and min(self.ahead) > self.index

    def read_to(self, end: int) -> None:
        """A read showed the log up to `end`: what was announced before it is settled."""
        self.index = max(self.index, end)
        self.ahead = {i: m for i, m in self.ahead.items() if i >= self.index}


@dataclass
class StepNews:
    """A reader's news of thread `thread`: announcements and deltas from `queue` (deltas held
    in `order`, when given: else they only count as news), a `StepWatch` while there are no
    announcements."""

    client: Client
    thread: str
    feed: StepFeed
    queue: asyncio.Queue[Live]
    poll_seconds: float
    quiet_seconds: float
    order: LiveOrder | None = None
    watching_with: Callable[[Client, str], Any] = StepWatch
    """What watches the history without announcements (a `StepWatch`)."""
    watch: StepWatch | None = None
    watcher: asyncio.Future[Any] | None = None

    def start(self) -> bool:
        """Take what has arrived; True when there is no announcement yet (read the earlier way)."""
        self.drain()
        if not self.feed.heard:
            self._watch()
        return not self.feed.heard

    @property
    def reading(self) -> bool:
        """Whether the log is read at each step (no announcements, or no longer trusted)."""
        return self.watch is not None or self.feed.replaced

    def before_read(self) -> None:
        if self.watch is not None:
            self.watch.ready.clear()  # before the read: a step completed after it is read next

    def after_read(self, history_length: int | None) -> None:
        if self.watch is not None:
            self.watch.read(history_length)

    def drain(self) -> None:
        while not self.queue.empty():
            self._take(self.queue.get_nowait())

    def _take(self, item: Live) -> None:
        if isinstance(item, Delta):
            if self.order is not None:
                self.order.hold(item)
            return
        self.feed.hear(item)
        if self.feed.replaced:
            self._watch()
        elif self.feed.heard:
            self._unwatch()  # announcements tell of each step: no watch of the history

    def _watch(self) -> None:
        if self.watcher is None or self.watcher.done():
            self.watch = self.watching_with(self.client, self.thread)
            self.watcher = background(self.watch.run())

    def _unwatch(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
        self.watch = self.watcher = None

    async def next(self, *outcomes: asyncio.Future[Any]) -> bool:
        """Wait for news or one of `outcomes`: True when the log is to be read (a step the watch
        saw, a gap, a delta while reading the earlier way, quiet for `quiet_seconds`), False
        when what came is in hand (an announcement, a delta, an outcome)."""
        getting: asyncio.Future[Live] = asyncio.ensure_future(self.queue.get())
        waits: list[asyncio.Future[Any]] = [getting, *outcomes]
        watching = self.watch is not None and self.watcher is not None and not self.watcher.done()
        if watching:
            assert self.watch is not None
            waits.append(asyncio.ensure_future(self.watch.ready.wait()))
        timeout = None if watching else self.poll_seconds if self.watch is not None else self.quiet_seconds
        try:
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when the reader left (cancelled): no task left pending
            getting.cancel()
            if watching:
                waits[-1].cancel()
        if getting in done and not getting.cancelled():
            self._take(getting.result())
            self.drain()
        if not done:  # quiet (or the watch ended: a poll): read the earlier way until the next announcement
            if self.watch is None:
                self._watch()
            return True
        if any(outcome in done for outcome in outcomes):
            return False
        woke_by_delta = getting in done and self.order is not None and isinstance(getting.result(), Delta)
        return self.feed.gap() or (self.reading and (woke_by_delta or getting not in done))

    def close(self) -> None:
        self._unwatch()


def background(coroutine: Any) -> asyncio.Future[Any]:
    """A task whose outcome may go unread (the client left, a question came first): reading
    it when it ends keeps asyncio from logging 'Task exception was never retrieved'."""
    task = asyncio.ensure_future(coroutine)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task
