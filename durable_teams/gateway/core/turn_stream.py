"""A turn's events as its steps are appended (`ThreadLog.turn_events`, the native turn
stream): each step shown from the worker's announcement on the live hub, in log order, with the
live deltas in their place (`LiveOrder`, as before); without announcements, read from the log
at each step (durable_teams/gateway/core/step_news.py says when). When the turn's reply has
come, one read of the log from the first step shown confirms what was shown and adds what the
hub missed; then `done`. A message the log holds otherwise than it was shown (see
durable_teams/worker/log_announcer.py) is counted in `differing`: a stream cannot take it back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from durable_teams.client.events import delta_event, page_events
from durable_teams.gateway.core.step_news import StepFeed, StepNews
from durable_teams.live.hub import LiveOrder
from durable_teams.workflows.conversation_reads import LogPage
from durable_teams.workflows.state import TurnReply


@dataclass
class TurnStream:
    """One turn's events (`events()`) from `news.feed.index`, the turn's reply awaited in `turn`,
    the thread's log read with `page` (a page from a log index)."""

    page: Callable[[int], Awaitable[LogPage]]
    news: StepNews
    turn: asyncio.Future[TurnReply]
    order: LiveOrder = field(default_factory=LiveOrder)
    differing: list[int] = field(default_factory=list)
    """Indexes the final read found holding another message than the one shown there."""

    def __post_init__(self) -> None:
        self.news.order = self.order

    @property
    def feed(self) -> StepFeed:
        return self.news.feed

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        read = self.news.start()  # until the first announcement: the earlier way
        while True:
            if self.turn.done():  # the reply came: one read confirms and fills, and the turn is done
                async for event in self._read(min(self.feed.shown, default=self.feed.index)):
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
            # a gap is read at once, unless a read just stopped short of it (the log's end then)
            read = (self.feed.gap() and not read) or await self.news.next(self.turn)

    async def _read(self, start: int) -> AsyncIterator[dict[str, Any]]:
        """Read the log from `start` to its end, showing what was not shown yet."""
        self.news.before_read()
        while True:
            page = await self.page(start)
            self.news.after_read(page.history_length)
            # Drained after the read: a call sends its deltas before its message is logged, so
            # those of a message on this page are mostly in hand (a later one is dropped by
            # `order`: the message has the whole text).
            self.news.drain()
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

    def close(self) -> None:
        self.turn.cancel()  # the client stopped reading: stop waiting (the turn itself goes on)
        self.news.close()


def done_event(reply: TurnReply) -> dict[str, Any]:
    return {"index": -1, "type": "done", "agent": reply.agent, "text": reply.text,
            "status": reply.status, "turn": reply.turn}
