"""OpenAI's chunk stream for `POST /v1/chat/completions` with `stream: true`: the team's text
as its model calls write it (live deltas), then the rest of the reply, usage and `[DONE]`."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from durable_teams.client.refusals import ConversationEnded, TurnAbandoned
from durable_teams.gateway.core.live_text import ContentStream
from durable_teams.gateway.core.outcomes import Outcome
from durable_teams.gateway.core.sse import sse_frame
from durable_teams.live.hub import Delta
from durable_teams.workflows.usage import Tally


def usage_of(tally: Tally | None) -> dict[str, int]:
    """OpenAI's usage: the tokens of every model call of the turn (nested teams included);
    zeros for a question (its turn goes on, counted when it ends)."""
    tally = tally or Tally()
    return {"prompt_tokens": tally.input_tokens, "completion_tokens": tally.output_tokens,
            "total_tokens": tally.total_tokens}


async def chunk_stream(team: str, outcome: Callable[[], Awaitable[Outcome]], usage: bool,
                  unsubscribe: Callable[[], Awaitable[Any]], deltas: asyncio.Queue[Delta],
                  mark: str = "") -> AsyncIterator[str]:
    """OpenAI's chunk stream: the team's text as its model calls write it (live deltas,
    durable_teams/live/hub.py), then what is left of the reply (all of it without live deltas),
    then `mark` (a thread mark, durable_teams/gateway/core/thread_marks.py)."""
    base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk",
            "created": int(time.time()), "model": team}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return sse_frame(None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    yield chunk({"role": "assistant", "content": ""})
    content = ContentStream()
    exchange = asyncio.ensure_future(outcome())
    exchange.add_done_callback(lambda t: t.cancelled() or t.exception())
    try:
        async for delta in until_done(exchange, deltas):
            piece = content.take(delta)
            if piece:
                yield chunk(piece)
        kind, answer, tally, finish = exchange.result()
    except ConversationEnded as ended:  # the status is sent already: OpenAI's in-stream error
        yield sse_frame(None, {"error": {"message": str(ended), "type": "conversation_ended"}})
        return
    except TurnAbandoned as abandoned:  # a rewind left the turn in the branch it abandoned
        yield sse_frame(None, {"error": {"message": str(abandoned), "type": "turn_abandoned"}})
        return
    finally:
        exchange.cancel()  # the client left: stop waiting (the turn goes on in the workflow)
        await unsubscribe()  # entered by the caller, before the turn (its response closes it too)
    if kind == "failed":
        yield sse_frame(None, {"error": {"message": answer, "type": "turn_failed", "code": "turn_failed"}})
        return
    rest = content.finish(answer) + mark
    if rest:
        yield chunk({"content": rest})
    yield chunk({}, finish)
    if usage:
        yield sse_frame(None, {**base, "choices": [], "usage": usage_of(tally)})
    yield sse_frame(None, "[DONE]")


async def until_done(exchange: asyncio.Future[Any], deltas: asyncio.Queue[Delta]) -> AsyncIterator[Delta]:
    """The deltas that arrive until `exchange` is done."""
    while not exchange.done():
        getting = asyncio.ensure_future(deltas.get())
        try:
            await asyncio.wait([exchange, getting], return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when the client left (cancelled): no task left pending
            got = getting.done() and not getting.cancelled()
            getting.cancel()
        if got:
            yield getting.result()
    while not deltas.empty():
        yield deltas.get_nowait()
