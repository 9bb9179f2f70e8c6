"""A turn's events as its steps are appended: shown from the worker's announcements on the live
hub, the log read once at the end to confirm them (`ThreadLog.turn_events`, which every
stream of a turn's steps goes through).

The worker that runs a conversation's workflow task announces each message the task appended
(`Logged`, durable_teams/worker/log_announcer.py) on the thread's channel, where its model calls
send their text deltas. A stream subscribed to that channel before its turn went in shows each
step from its announcement, in log order (`StepFeed`: index after index; an announcement past
the next index expected, a gap, is filled by one read of the log from there), with the deltas
in their place (`LiveOrder`, as before). When the turn's reply has come, one read of the log
from the first step shown confirms what was shown and adds what the hub missed; then `done`.
So a turn costs its stream one read instead of a long poll of the history and a query per step.

Nothing is missed or stalls without announcements: until the first one arrives (a worker in
another process with no shared hub, an earlier release's worker) and again once
`quiet_seconds` pass with neither an announcement nor a delta (a message lost on the way, a
broker that went away), the stream reads the log the earlier way, at each step a `StepWatch`
tells of (durable_teams/client/step_watch.py); the next announcement ends that.

The log is the truth: a message announced and then not recorded (its worker died before
Temporal had its workflow task; see durable_teams/worker/log_announcer.py) may have been shown
at an index where the log holds another once the task ran again. The final read finds it; a
stream cannot take back what it showed (it shows the log's message only where it showed none).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from durable_teams.client.events import delta_event, page_events
from durable_teams.client.step_watch import StepWatch
from durable_teams.live.hub import Delta, Live, LiveOrder, Logged
from durable_teams.workflows.conversation_reads import LogPage
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply

if TYPE_CHECKING:
    from durable_teams.gateway.core.thread_log import ThreadLog


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
class TurnStream:
    """One turn's events (`events()`) from `feed.index`, the turn's reply awaited in `turn`,
    the thread's deltas and announcements arriving in `queue` (subscribed before the turn)."""

    log: ThreadLog
    thread: str
    feed: StepFeed
    turn: asyncio.Future[TurnReply]
    queue: asyncio.Queue[Live]
    order: LiveOrder = field(default_factory=LiveOrder)
    watch: StepWatch | None = None
    watcher: asyncio.Future[Any] | None = None
    differing: list[int] = field(default_factory=list)
    """Indexes the final read found holding another message than the one shown there."""

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        self._drain()
        read = not self.feed.heard
        if read:  # until the first announcement: the earlier way
            self._watch()
        while True:
            if self.turn.done():  # the reply came: one read confirms and fills, and the turn is done
                async for event in self._read(self.confirm_from()):
                    yield event
                for delta in self.order.ready(self.feed.index):
                    yield delta_event(delta).model_dump(mode="json")
                yield done_event(self.turn.result())
                return
            if read:
                async for event in self._read(self.feed.index):
                    yield event
            for event in self._shown_ready():
                yield event
            read = await self._next()

    def confirm_from(self) -> int:
        return min(self.feed.shown, default=self.feed.index)

    async def _read(self, start: int) -> AsyncIterator[dict[str, Any]]:
        """Read the log from `start` to its end, showing what was not shown yet."""
        if self.watch is not None:
            self.watch.ready.clear()  # before the read: a step completed after it is read next
        while True:
            page = await self.log._page(self.thread, start)
            if self.watch is not None:
                self.watch.read(page.history_length)
            # Drained after the read: a call sends its deltas before its message is logged, so
            # those of a message on this page are mostly in hand (a later one is dropped by
            # `order`: the message has the whole text).
            self._drain()
            fresh = self._settled(page, start)
            for event in page_events(self.order, fresh, fresh.start, by_page_shared=False):
                yield event.model_dump(mode="json")
            start += len(page.messages)
            self.feed.read_to(start)
            if start >= page.total:
                return

    def _settled(self, page: LogPage, start: int) -> LogPage:
        """The part of `page` not shown yet; the part shown is compared with the log."""
        for at, message in enumerate(page.messages, start):
            shown = self.feed.shown.pop(at, None)
            if shown is not None and shown != message:
                self.differing.append(at)
        skip = max(0, min(self.feed.index, start + len(page.messages)) - start)
        return LogPage(start=start + skip, messages=page.messages[skip:], total=page.total)

    def _shown_ready(self) -> list[dict[str, Any]]:
        """The announced messages next in the log, each after the deltas before it, then the
        deltas of calls begun by the log's end so far."""
        start = self.feed.index
        messages = self.feed.ready()
        events = [e.model_dump(mode="json") for e in page_events(
            self.order, LogPage(start=start, messages=messages, total=start + len(messages)), start,
            by_page_shared=False)]
        return events + [delta_event(d).model_dump(mode="json") for d in self.order.ready(self.feed.index)]

    def _drain(self) -> None:
        while not self.queue.empty():
            self._take(self.queue.get_nowait())

    def _take(self, item: Live) -> None:
        if isinstance(item, Delta):
            self.order.hold(item)
            return
        self.feed.hear(item)
        if self.feed.replaced:
            self._watch()
        elif self.feed.heard:
            self._unwatch()  # announcements tell of each step: no watch of the history

    def _watch(self) -> None:
        if self.watcher is None or self.watcher.done():
            self.watch = StepWatch(self.log.client, self.thread)
            self.watcher = background(self.watch.run())

    def _unwatch(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()
        self.watch = self.watcher = None

    async def _next(self) -> bool:
        """Wait for news: True when the log is to be read (a step the watch saw, a gap, a delta
        while reading the earlier way, quiet for `quiet_seconds`), False when what came is
        shown without a read (an announcement, a delta, the reply: read at the loop's top)."""
        getting: asyncio.Future[Live] = asyncio.ensure_future(self.queue.get())
        waits: list[asyncio.Future[Any]] = [self.turn, getting]
        watching = self.watch is not None and self.watcher is not None and not self.watcher.done()
        if watching:
            assert self.watch is not None
            waits.append(asyncio.ensure_future(self.watch.ready.wait()))
        timeout = None if watching else self.log.poll_seconds if self.watch is not None else self.log.quiet_seconds
        try:
            done, _ = await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when the client left (cancelled): no task left pending
            for wait in waits[1:]:
                wait.cancel()
        if getting in done:
            self._take(getting.result())
            self._drain()
        reading = self.watch is not None or self.feed.replaced
        if not done:  # quiet (or the watch ended: a poll): read the earlier way until the next announcement
            if self.watch is None:
                self._watch()
            return True
        return self.feed.gap() or (reading and (getting in done or self.turn not in done))

    def close(self) -> None:
        self.turn.cancel()  # the client stopped reading: stop waiting (the turn itself goes on)
        self._unwatch()


def background(coroutine: Any) -> asyncio.Future[Any]:
    """A task whose outcome may go unread (the client left, a question came first): reading
    it when it ends keeps asyncio from logging 'Task exception was never retrieved'."""
    task = asyncio.ensure_future(coroutine)
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    return task


def done_event(reply: TurnReply) -> dict[str, Any]:
    return {"index": -1, "type": "done", "agent": reply.agent, "text": reply.text,
            "status": reply.status, "turn": reply.turn}
