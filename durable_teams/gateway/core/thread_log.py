"""Reading a thread's log for the gateway: its length, what a person said last, and a turn's
events as they are appended, with the live text deltas in their place (ABI's event stream).

One part of `Gateway` (durable_teams/gateway/core/threads.py), which makes it from its own client,
live hub and poll interval."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from temporalio.client import Client

from durable_teams.client.refusals import ConversationEnded, TurnAbandoned
from durable_teams.client.send import AcceptedTurn
from durable_teams.gateway.core.step_news import StepFeed, StepNews, background
from durable_teams.gateway.core.turn_stream import TurnStream
from durable_teams.live.hub import Delta, Live, LiveHub
from durable_teams.workflows.conversation import TeamWorkflow
from durable_teams.workflows.conversation_reads import LogPage
from durable_teams.workflows.messages import Message
from durable_teams.workflows.state import TurnReply

log = logging.getLogger(__name__)

QUIET_SECONDS = 3.0
"""How long a turn's stream waits for an announcement or a delta before it reads the log the
earlier way (a `StepWatch`), until the next announcement."""
LOG_ENDS_KEPT = 10_000
_LOG_ENDS: dict[str, int] = {}
"""Where this process last saw each thread's log end (oldest first; a hint only: a rewind may
shorten a log, and the read that finds it so reads the usual way)."""


@dataclass
class ThreadLog:
    """A thread's log, read through `client` (live text and announced steps from `hub`;
    `poll_seconds`: how often a stream reads again without a watch of the history;
    `quiet_seconds`: `QUIET_SECONDS`)."""

    client: Client
    hub: LiveHub
    poll_seconds: float
    quiet_seconds: float = QUIET_SECONDS

    async def log_total(self, thread: str) -> int:
        page = await self._page(thread, 0, 0)
        return page.total

    async def latest_said(self, thread: str, page_size: int = 50) -> str | None:
        """What a person said last in the thread, as its log has it: the message of the latest
        turn, or a later answer to a plain question (`ask_human`) of that turn (read back from
        the end a page at a time); None when there is neither."""
        end = await self.log_total(thread)
        while end > 0:
            start = max(0, end - page_size)
            page = await self._page(thread, start, end - start)
            for message in reversed(page.messages):
                turn = _turn_message(message)
                if turn or (message.role == "tool" and message.kind == "human"):
                    return message.content or ""
            end = start
        return None

    async def turn_start(self, thread: str, number: int, latest: int, page_size: int = 50) -> int | None:
        """The log index of turn `number`'s message (its events start there), counted back from
        turn `latest`'s, the newest begun; None when the log does not hold it."""
        return (await self._turn_start_page(thread, number, latest, page_size))[0]

    async def _turn_start_page(self, thread: str, number: int, latest: int,
                               page_size: int = 50) -> tuple[int | None, list[tuple[int, Message]]]:
        """`turn_start`, and the messages from there to the end of the log when the page read
        last reached it (none otherwise). Read from where this process last saw the log end,
        when it did and the turn's message is past it (one read instead of two)."""
        hint = _LOG_ENDS.get(thread)
        if hint is not None and number == latest:
            page = await self._page(thread, hint)
            if page.total >= hint and hint + len(page.messages) == page.total:
                starts = [n for n, m in enumerate(page.messages) if _turn_message(m)]
                if starts:
                    return hint + starts[-1], list(enumerate(page.messages, hint))[starts[-1]:]
        back, end = latest - number, await self.log_total(thread)
        total = end
        while end > 0 and back >= 0:
            start = max(0, end - page_size)
            page = await self._page(thread, start, end - start)
            for offset, message in zip(range(len(page.messages) - 1, -1, -1), reversed(page.messages), strict=True):
                if _turn_message(message):
                    if back == 0:
                        rest = list(enumerate(page.messages, start))[offset:] if end == total else []
                        return start + offset, rest
                    back -= 1
            end = start
        return None, []

    async def turn_messages(self, thread: str, number: int, latest: int, limit: int = 200) -> list[tuple[int, Message]]:
        """Turn `number`'s log messages with their indexes, from its message to the next turn's
        (at most `limit`; `latest`: the newest turn begun); none when the log does not hold it."""
        start, rest = await self._turn_start_page(thread, number, latest)
        if rest and len(rest) <= limit:  # the turn's stretch to the end of the log, read already
            return rest[:next((n for n, (_, m) in enumerate(rest) if n and _turn_message(m)), len(rest))]
        found: list[tuple[int, Message]] = []
        while start is not None and len(found) < limit:
            page = await self._page(thread, start, limit - len(found))
            for offset, message in enumerate(page.messages):
                if found and _turn_message(message):
                    return found  # the next turn's message
                found.append((start + offset, message))
            start += len(page.messages)
            if not page.messages or start >= page.total:
                break
        return found

    async def _page(self, thread: str, start: int, limit: int = 200) -> LogPage:
        handle = self.client.get_workflow_handle(thread)
        page: LogPage = await handle.query(TeamWorkflow.log_page, args=[start, limit])
        _LOG_ENDS[thread] = page.total
        while len(_LOG_ENDS) > LOG_ENDS_KEPT:
            _LOG_ENDS.pop(next(iter(_LOG_ENDS)))
        return page

    async def turn_events(self, thread: str, index: int, accepted: AcceptedTurn,
                          deltas: asyncio.Queue[Live] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Yield each event of the log from `index` as it is appended (ABI's stream) while the
        accepted turn runs, ending with `done` carrying the reply, or `error` when the turn
        could not run. Steps are shown as the worker announces them on the live hub, the log
        read once at the end to confirm (durable_teams/gateway/core/turn_stream.py). Live text
        deltas (durable_teams/live/hub.py) come as `ai_message_delta`, each after the log
        messages that came before its model call and before the message it adds up to.
        `deltas`: the thread's `subscribe_steps` queue, entered before the turn went in (none:
        subscribed here)."""
        subscribing = self.hub.subscribe_steps(thread)
        async with nullcontext(deltas) if deltas is not None else subscribing as queue:
            news = StepNews(self.client, thread, StepFeed(index), queue, self.poll_seconds, self.quiet_seconds)
            stream = TurnStream(lambda start: self._page(thread, start), news, background(accepted.reply()))
            try:
                async for event in stream.events():
                    yield event
            except (ConversationEnded, TurnAbandoned) as ended:  # why it will not be answered
                yield {"index": -1, "type": "error", "text": str(ended)}
            finally:
                stream.close()
                if stream.differing:
                    log.warning("thread %s: the log holds other messages than the steps announced at %s",
                                thread, stream.differing)

    async def until_news(self, turn: asyncio.Future[TurnReply], deltas: asyncio.Queue[Delta],
                         grown: asyncio.Event | None = None, watcher: asyncio.Future[Any] | None = None
                         ) -> Delta | None:
        """Wait for the reply, a delta (returned), or a step of the conversation completed (its
        history grew: `grown`, set by a `StepWatch`; the log changes only then, so no timer);
        without a watch (none given, or it ended: the conversation stopped, or its long poll
        failed), the next poll, `poll_seconds` later."""
        waiting: asyncio.Future[Delta] = asyncio.ensure_future(deltas.get())
        both: list[asyncio.Future[Any]] = [turn, waiting]
        if grown is not None and watcher is not None and not watcher.done():
            both.append(asyncio.ensure_future(grown.wait()))
        try:
            done, _ = await asyncio.wait(both, timeout=None if len(both) > 2 else self.poll_seconds,
                                         return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when the client left (cancelled): no task left pending
            for wait in both[1:]:
                wait.cancel()
        return waiting.result() if waiting in done else None


def _turn_message(message: Message) -> bool:
    """Whether `message` is a turn's own (a person's message to the team): a turn starts there."""
    return message.role == "user" and message.kind == "message" and message.agent_run == 0
