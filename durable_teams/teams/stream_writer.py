"""`get_stream_writer()`: a tool writes custom stream data while it runs, as a LangGraph node
does with `langgraph.config.get_stream_writer()`.

What a tool writes comes back with its result (activities/tool_activities.py), is kept on the
tool's message in the conversation's log (never sent to a model, never shown by the chat,
Responses, A2A or MCP doors) and is streamed by the LangGraph door as `custom` events
(docs/langgraph-server.md). Pure: no Temporal, no I/O.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable
from typing import Any

__all__ = ["MAX_STREAM_WRITE_BYTES", "StreamWriteError", "StreamWrites", "get_stream_writer"]

MAX_STREAM_WRITE_BYTES = 64 * 1024
"""What one tool call may write in all (as JSON): it travels with the tool's result and stays
in the conversation's log."""


class StreamWriteError(ValueError):
    """What a tool wrote cannot be kept: not JSON, or over `MAX_STREAM_WRITE_BYTES`."""


class StreamWrites:
    """What one tool call wrote, in order, as plain JSON data."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.items: list[Any] = []
        self.size = 0

    def write(self, data: Any) -> None:
        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=False)
            text.encode()
        except (TypeError, ValueError) as err:  # a lone surrogate is a UnicodeEncodeError
            raise StreamWriteError(f"{self.tool} wrote stream data JSON cannot encode "
                                   f"({type(err).__name__}: {err})") from None
        size = len(text.encode())
        if self.size + size > MAX_STREAM_WRITE_BYTES:
            raise StreamWriteError(
                f"{self.tool} wrote {self.size + size:,} bytes of stream data, over the "
                f"{MAX_STREAM_WRITE_BYTES:,}-byte limit of one tool call; this write was not kept")
        self.size += size
        self.items.append(json.loads(text))


STREAM_WRITES: contextvars.ContextVar[StreamWrites | None] = contextvars.ContextVar("stream_writes", default=None)
"""Set by the tool activity around each call (activities/tool_activities.py)."""


def get_stream_writer() -> Callable[[Any], None]:
    """The running tool call's stream writer: `writer(data)` keeps `data` (JSON-able, at most
    `MAX_STREAM_WRITE_BYTES` in all for one call) to be streamed as a LangGraph `custom`
    event. Outside a tool run (or in a thread the tool started itself) it raises
    `RuntimeError`; data that cannot be kept raises `StreamWriteError` from the writer."""
    writes = STREAM_WRITES.get()
    if writes is None:
        raise RuntimeError("get_stream_writer() is called outside a tool run: only a tool, while "
                           "the worker runs it, has a stream writer")
    return writes.write
