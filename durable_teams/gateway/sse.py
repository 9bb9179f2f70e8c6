"""Server-sent events: the wire format, and turning a generator of dicts into a response."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse


def sse_frame(event: str | None, data: Any) -> str:
    """One SSE frame. `data` is JSON-encoded (one line, so no frame splitting is needed)."""
    body = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {body}\n\n"


def sse_response(frames: AsyncIterator[str], headers: dict[str, str] | None = None) -> StreamingResponse:
    """A streaming response of SSE frames; proxies are told not to buffer it."""
    return StreamingResponse(
        frames, media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})})
