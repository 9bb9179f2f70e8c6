"""Live text in a Responses stream: the durable events stay the truth, deltas are an extra.

A stream's events are numbered from durable state (durable_teams/gateway/doors/responses/events.py)
and `starting_after=N` resumes them in any process. Model text deltas travel apart, on the
live hub (durable_teams/live/hub.py: Redis pub/sub between processes), and never enter that
numbering: a live delta is a `response.output_text.delta` of the response's message item (which
the live layout opens first, at output index 0) carrying the `sequence_number` of the durable
event sent before it. When the response ends, the message's durable delta sends only what the
connection's live deltas have not: the deltas of one connection add up to the final text
(unless text it showed was not the answer's start: a model's words beside a tool call, a
retried call; then the answer follows whole, after a paragraph break, as on the chat path).

A delta is shown only for a model call this connection saw from its first word: one made after
it subscribed, which it tells by the call's `position` (the log's length when the call was
made) being past the log's end when it subscribed. A `POST` stream subscribes before its input
goes in, so it sees all of its calls (unless it is a request sent again: the calls already made
come whole); a resumed stream sees those made after it joined. The text of any other call comes
whole at the end.
A stream also subscribes to the steps the worker announces (`Opened`) before its input goes in:
`state.views` shows each step from its announcement (durable_teams/gateway/core/step_news.py).
Live deltas are on only where they cross processes (a broker is configured: `Gateway.
live_responses`, the same on every gateway), so without one a stream is as it always was.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any

from temporalio.service import RPCError, RPCStatusCode

from durable_teams.gateway.core.live_text import ContentStream
from durable_teams.gateway.core.threads import Gateway
from durable_teams.gateway.doors.responses.events import message_id
from durable_teams.gateway.doors.responses.from_log import ResponseRef, View
from durable_teams.live.hub import Delta, Live

OPENED = 3
"""The sequence number of the live layout's `content_part.added`: deltas go after it."""


@dataclass
class Feed:
    """A subscription to a thread's deltas (entered; closed by `close`), and `floor`: the
    least `position` of a model call it saw from its first word."""

    thread: str
    subscription: AbstractAsyncContextManager[Any]
    deltas: asyncio.Queue[Delta]
    floor: int


async def open_feed(gw: Gateway, thread: str) -> Feed | None:
    """The thread's deltas from now on (None where Responses streams carry none), for the model
    calls made after the log's present end: a call under way now (its `position` is at most
    the log's length) began before this feed and is shown whole at the end, never in part."""
    if not gw.live_responses:
        return None
    subscription = gw.hub.subscribe(thread)
    deltas = await subscription.__aenter__()
    try:
        floor = await gw.log_total(thread) + 1
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            await subscription.__aexit__(None, None, None)
            raise
        floor = 0  # a thread this request opens: every call of it is new
    except BaseException:
        await subscription.__aexit__(None, None, None)
        raise
    return Feed(thread, subscription, deltas, floor)


async def close(feed: Feed | None) -> None:
    if feed is not None:
        await feed.subscription.__aexit__(None, None, None)


@dataclass
class Opened:
    """What a stream subscribed to before its input went in: the thread's announced steps
    (`steps`, the `subscribe_steps` queue read by `state.views`: the turn's first steps are
    announced to it, so it needs no history watch to learn of them) and, where deltas are
    shown, its `feed`. `closed` by `close_stream` (once: the stream and its response both do)."""

    thread: str
    subscription: AbstractAsyncContextManager[asyncio.Queue[Live]]
    steps: asyncio.Queue[Live]
    feed: Feed | None
    closed: bool = False


async def open_stream(gw: Gateway, thread: str) -> Opened:
    """The thread's announced steps and its deltas (`open_feed`) from now on."""
    subscription = gw.hub.subscribe_steps(thread)
    steps = await subscription.__aenter__()
    try:
        return Opened(thread, subscription, steps, await open_feed(gw, thread))
    except BaseException:
        await subscription.__aexit__(None, None, None)
        raise


async def close_stream(opened: Opened | None) -> None:
    if opened is not None and not opened.closed:
        opened.closed = True
        try:
            await close(opened.feed)
        finally:
            await opened.subscription.__aexit__(None, None, None)


async def stream_for(gw: Gateway, opened: Opened | None, ref: ResponseRef) -> Opened:
    """What a created response's stream reads: what was subscribed before its input went in,
    if on its thread (not a fork's, say), else subscribed now."""
    if opened is not None and opened.thread == ref.thread:
        return opened
    await close_stream(opened)
    return await open_stream(gw, ref.thread)


@dataclass
class LiveText:
    """What one connection showed of a response live, and what its final delta still owes."""

    ref: ResponseRef
    floor: int
    content: ContentStream = field(default_factory=ContentStream)

    def take(self, delta: Delta) -> str:
        """The text to show for `delta` ("" for none: another thread's, a worker's own, a call
        not seen from its start)."""
        if delta.workflow_id != self.ref.thread or not delta.shared or delta.position < self.floor:
            return ""
        return self.content.take(delta).get("content", "")

    def rest(self, text: str) -> str:
        """The message's durable delta on this connection: what the live ones did not send."""
        return self.content.finish(text) if self.content.sent else text

    def event(self, piece: str, after: int) -> dict[str, Any]:
        """A live delta, numbered as the durable event `after` it."""
        return {"type": "response.output_text.delta", "item_id": message_id(self.ref), "output_index": 0,
                "content_index": 0, "delta": piece, "logprobs": [], "sequence_number": after}


async def merged(views: AsyncIterator[View], deltas: asyncio.Queue[Delta] | None
                 ) -> AsyncIterator[View | Delta]:
    """The views of a response as they come and, after the first (which opens the message
    item), the deltas that arrive between them (they wait in the queue until then)."""
    if deltas is None:
        async for view in views:
            yield view
        return
    try:
        yield await anext(views)
    except StopAsyncIteration:
        return
    reading: asyncio.Future[View] = asyncio.ensure_future(anext(views))
    getting: asyncio.Future[Delta] | None = None
    try:
        while True:
            getting = getting or asyncio.ensure_future(deltas.get())
            both: list[asyncio.Future[Any]] = [reading, getting]
            await asyncio.wait(both, return_when=asyncio.FIRST_COMPLETED)
            if reading.done():
                try:
                    view = reading.result()
                except StopAsyncIteration:
                    return
                yield view
                reading = asyncio.ensure_future(anext(views))
            if getting.done():
                yield getting.result()
                getting = None
    finally:
        reading.cancel()
        if getting is not None:
            getting.cancel()
