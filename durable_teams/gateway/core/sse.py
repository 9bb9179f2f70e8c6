"""Server-sent events: the wire format, and turning a generator of dicts into a response."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from durable_teams.gateway.core.tenant_ids import in_own_words

log = logging.getLogger(__name__)


def sse_frame(event: str | None, data: Any) -> str:
    """One SSE frame. `data` is JSON-encoded (one line, so no frame splitting is needed)."""
    body = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n"


def native_error(message: str) -> str:
    return sse_frame("error", {"index": -1, "type": "error", "text": message})


def openai_error(message: str) -> str:
    return sse_frame(None, {"error": {"message": message, "type": "server_error"}})


Close = Callable[[], Awaitable[Any]]
"""What a stream holds open (a live-hub subscription) closed; `once` makes it safe to call twice."""


def once(close: Close) -> Close:
    """`close` run on the first call only (a stream's generator and its response both call it)."""
    done = False

    async def closing() -> None:
        nonlocal done
        if not done:
            done = True
            await close()
    return closing


class ClosingStream(StreamingResponse):
    """A streaming response that runs `close` when it is over however it ends: sent in full,
    the client gone (even before the first byte, when the body's generator never started and
    its own `finally` never runs), or an error."""

    def __init__(self, frames: AsyncIterator[str], close: Close | None, **kwargs: Any) -> None:
        super().__init__(frames, **kwargs)
        self.close = close

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.close is not None:
                await self.close()


def sse_response(frames: AsyncIterator[str], headers: dict[str, str] | None = None,
                 error_frame: Callable[[str], str] = native_error, scope: str | None = None,
                 close: Close | None = None) -> StreamingResponse:
    """A streaming response of SSE frames; proxies are told not to buffer it. Once the
    status is sent an error cannot be a status any more: a failure while streaming (Temporal
    unreachable, a query that timed out) ends the stream with an error frame saying why, a
    thread in it named as a caller of `scope` names it (durable_teams/gateway/core/tenant_ids.py).
    `close`: what the frames hold open (a live subscription entered before the response was
    made), closed when the response is over, whether or not its body ever ran (`ClosingStream`)."""
    return ClosingStream(
        _ending_cleanly(frames, lambda text: error_frame(in_own_words(scope, text))), close,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})})


async def _ending_cleanly(frames: AsyncIterator[str], error_frame: Callable[[str], str]) -> AsyncIterator[str]:
    try:
        async for frame in frames:
            yield frame
    except Exception as err:  # noqa: BLE001 - the stream's last word, instead of a cut connection
        reason = getattr(err, "message", None) or str(err) or type(err).__name__
        log.warning("a stream ended early: %s: %s", type(err).__name__, reason)
        yield error_frame(f"the stream stopped: {reason}")
